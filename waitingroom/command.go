package waitingroom

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/rehearse"
)

// The `caddy waiting-room` commands, registered as Caddy's `caddy storage` is. They read
// their flags and the site's config, map the room as Provision does, and call the engine.
func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "waiting-room",
		Short: "Commands for the waiting room",
		CobraFunc: func(cmd *cobra.Command) {
			r := &cobra.Command{
				Use:          "rehearse --config <path> [--room <name>] (--arrivals <segments> | --arrivals-csv <file> | --sale <file>) [--out <dir>] [--seed <n>] [--compare <settings>]...",
				Short:        "Plays a sale against the room's real engine, faster than real time, and reports",
				Long:         rehearse.Help,
				Args:         cobra.NoArgs,
				SilenceUsage: true,
				RunE:         cmdRehearse,
			}
			f := r.Flags()
			f.StringP("config", "c", "", "Configuration file (default: the Caddyfile in this folder)")
			f.StringP("adapter", "a", "", "Name of config adapter to apply")
			f.String("room", "", "The waiting room to rehearse, by name (when the config has several)")
			f.StringP("out", "o", "rehearsal", "Folder to write report.html and report.json into")
			f.Uint64("seed", 1, "Seed of the visitors' draws: the same seed plays the same sale")
			f.String("sale", "", "Sale file: one setting a line, named as the flags are")
			for _, s := range rehearse.SaleSettings() {
				f.String(s[0], "", s[1])
			}
			f.StringArray("compare", nil, `Settings to rehearse beside the room's, as an admin API PATCH body ({"capacity": 800}); repeat for more`)
			f.Duration("horizon", 24*time.Hour, "How long after the last arrival to follow a line that does not clear")
			cmd.AddCommand(r)
		},
	})
}

func cmdRehearse(cmd *cobra.Command, _ []string) error {
	fl := caddycmd.Flags{FlagSet: cmd.Flags()}
	sale, err := rehearse.SaleFrom(fl.String("sale"), func(name string) (string, bool) { return fl.String(name), fl.Changed(name) })
	if err != nil {
		return err
	}
	config, _, _, err := caddycmd.LoadConfig(fl.String("config"), fl.String("adapter"))
	if err != nil {
		return err
	}
	raw, err := rehearse.FindRoom(caddy.RemoveMetaFields(config), fl.String("room"))
	if err != nil {
		return err
	}
	var h Handler
	if err := caddy.StrictUnmarshalJSON(raw, &h); err != nil {
		return fmt.Errorf("the waiting room's config: %w", err)
	}
	cfg, err := h.EngineConfig()
	if err != nil {
		return fmt.Errorf("waiting room %s: %w", h.Name, err)
	}
	seed, _ := fl.GetUint64("seed")
	compare, _ := fl.GetStringArray("compare")
	c := rehearse.Command{Room: *cfg, Compare: compare, Sale: sale, Seed: seed, Horizon: fl.Duration("horizon"), Out: fl.String("out"),
		Progress: cmd.ErrOrStderr()}
	return c.Run(cmd.Context(), cmd.OutOrStdout())
}
