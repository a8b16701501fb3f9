package admin

import (
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
)

// passes mints passes: POST /waiting_room/<name>/passes {"count": n, "ttl": "24h",
// "uses": u}, each optional (1, 24h, 1). The room checks the bounds.
func (a *Admin) passes(w http.ResponseWriter, r *http.Request, rm *room.Room) error {
	var req struct {
		Count *int    `json:"count"`
		TTL   *string `json:"ttl"`
		Uses  *int    `json:"uses"`
	}
	if r.ContentLength != 0 {
		if err := decodeStrict(r, &req); err != nil {
			return err
		}
	}
	count, uses, ttl := 1, 1, 24*time.Hour
	if req.Count != nil {
		count = *req.Count
	}
	if req.Uses != nil {
		uses = *req.Uses
	}
	if req.TTL != nil {
		d, err := caddy.ParseDuration(*req.TTL)
		if err != nil {
			return apiError(http.StatusBadRequest, fmt.Errorf("ttl must be a duration such as \"24h\" or \"7d\", got %q", *req.TTL))
		}
		ttl = d
	}
	passes, expires, err := rm.MintPasses(r.Context(), count, ttl, uses)
	if err != nil {
		return err
	}
	return writeJSON(w, map[string]any{"passes": passes, "expires_at": expires.UTC().Format(time.RFC3339)})
}
