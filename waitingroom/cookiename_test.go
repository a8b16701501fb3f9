package waitingroom

import (
	"context"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// Two rooms of one config whose cookies share a name would each overwrite the other's
// cookie in the browser: a visitor of one loses the place in the other, which stays
// behind as a ghost. The Caddyfile refuses them, naming both rooms and both lines.
func TestCaddyfileCookieNamesCollide(t *testing.T) {
	for _, tc := range []struct {
		name, rooms string
		wantErr     []string // "" in wantErr: the config adapts
	}{
		{
			name: "derived names",
			rooms: "\twaiting_room /a/* {\n\t\tname sale.x\n\t\tcapacity 1\n\t}\n" +
				"\twaiting_room /b/* {\n\t\tname sale_x\n\t\tcapacity 1\n\t}\n",
			wantErr: []string{`rooms "sale_x" and "sale.x" both use the cookie "waiting_room_sale_x"`, "Caddyfile:3", "Caddyfile:7"},
		},
		{
			name: "explicit names",
			rooms: "\twaiting_room /a/* {\n\t\tname a\n\t\tcapacity 1\n\t\tcookie {\n\t\t\tname wr\n\t\t}\n\t}\n" +
				"\twaiting_room /b/* {\n\t\tname b\n\t\tcapacity 1\n\t\tcookie {\n\t\t\tname wr\n\t\t}\n\t}\n",
			wantErr: []string{`rooms "b" and "a" both use the cookie "wr"`, "Caddyfile:6", "Caddyfile:13"},
		},
		{
			name: "an explicit name that is another room's derived one",
			rooms: "\twaiting_room /a/* {\n\t\tname a\n\t\tcapacity 1\n\t}\n" +
				"\twaiting_room /b/* {\n\t\tname b\n\t\tcapacity 1\n\t\tcookie {\n\t\t\tname waiting_room_a\n\t\t}\n\t}\n",
			wantErr: []string{`rooms "b" and "a" both use the cookie "waiting_room_a"`},
		},
		{
			name: "one room on two paths",
			rooms: "\twaiting_room /a/* {\n\t\tname sale\n\t\tcapacity 1\n\t}\n" +
				"\twaiting_room /b/* {\n\t\tname sale\n\t\tcapacity 1\n\t}\n",
		},
		{
			name: "distinct names",
			rooms: "\twaiting_room /a/* {\n\t\tname sale.x\n\t\tcapacity 1\n\t}\n" +
				"\twaiting_room /b/* {\n\t\tname sale_x\n\t\tcapacity 1\n\t\tcookie {\n\t\t\tname sale_underscore\n\t\t}\n\t}\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := ":8080 {\n" + tc.rooms + "\trespond ok\n}\n"
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(body), map[string]any{"filename": "Caddyfile"})
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("two rooms with one cookie name adapted")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q: %v", want, err)
				}
			}
		})
	}
}

// Rooms across sites are in one config too: cookies ignore ports, and a cookie
// domain would join hosts.
func TestCaddyfileCookieNamesCollideAcrossSites(t *testing.T) {
	body := ":8080 {\n\twaiting_room {\n\t\tname sale.x\n\t\tcapacity 1\n\t}\n\trespond ok\n}\n" +
		":8081 {\n\twaiting_room {\n\t\tname sale_x\n\t\tcapacity 1\n\t}\n\trespond ok\n}\n"
	_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(body), map[string]any{"filename": "Caddyfile"})
	if err == nil || !strings.Contains(err.Error(), `both use the cookie "waiting_room_sale_x"`) {
		t.Fatalf("rooms of two sites sharing a cookie: %v", err)
	}
}

// The JSON path: a second room of the same config that takes an existing room's
// cookie fails Provision naming both. A room of another config (the old one, during a
// reload) is not in the way, nor is the same room twice.
func TestProvisionCookieNamesCollide(t *testing.T) {
	suffix := strings.ReplaceAll(t.Name(), "/", "-")
	dot, underscore := "sale.x"+suffix, "sale_x"+suffix
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	provision := func(ctx caddy.Context, name string) error {
		h := &Handler{Name: name, Capacity: 1}
		err := h.Provision(ctx)
		t.Cleanup(func() { _ = h.Cleanup() })
		return err
	}
	if err := provision(ctx, dot); err != nil {
		t.Fatal(err)
	}
	if err := provision(ctx, dot); err != nil {
		t.Fatalf("the same room twice in one config: %v", err)
	}
	err := provision(ctx, underscore)
	if err == nil {
		t.Fatal("a second room with the first's cookie name provisioned")
	}
	for _, want := range []string{underscore, dot, "waiting_room_sale_x" + suffix} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %q: %v", want, err)
		}
	}

	// The next config (a reload that renames the room) is not refused for the
	// old config's room.
	next, cancelNext := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancelNext()
	if err := provision(next, underscore); err != nil {
		t.Fatalf("a room of the next config refused for one of the old: %v", err)
	}
}
