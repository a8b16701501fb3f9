package waitingroom

import (
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
)

// The room's placeholders, for the routes behind it (reverse_proxy's header_up,
// request_header) and for access logs (log_append). docs/placeholders.md is the table.
const placeholderPrefix = "http.waiting_room."

// What {http.waiting_room.status} says.
const (
	visitAdmitted    = "admitted"
	visitQueued      = "queued"
	visitRejected    = "rejected"
	visitUnavailable = "unavailable"
	visitChallenge   = "challenge" // a new visitor without a valid proof of work
)

// visit is what the room decided about one request. Its placeholders are given to the
// request's replacer as one provider, read when a placeholder is asked for: an
// admitted request that no route asks about pays for this struct and the provider,
// never for formatting an id. When admitted, it holds the watcher of the upstream's
// answer too, so a request allocates one object for both.
type visit struct {
	room     string
	status   string
	id       queue.VisitorID
	hasID    bool
	waited   time.Duration // how long the visitor waited in line; known says if set
	known    bool
	position int
	capacity int  // in force when the request was decided on
	keyed    bool // the request came with a key

	watcher revokeWatcher // an admitted request's (passAdmitted)
}

// visitOf returns the request's visit, registered with its replacer; nil (which every
// method takes) when the request has none (outside Caddy's HTTP server).
func (h *Handler) visitOf(r *http.Request) *visit {
	repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if !ok || repl == nil {
		return nil
	}
	v := &visit{room: h.Name}
	repl.Map(v.placeholder)
	return v
}

// decided records the room's decision d for the placeholders.
func (v *visit) decided(d *room.Decision) {
	if v == nil {
		return
	}
	v.capacity, v.keyed = d.Settings.Capacity, d.Keyed
	switch {
	case d.Place == queue.Admitted:
		v.status, v.id, v.hasID = visitAdmitted, d.Visitor, true
		v.waited, v.known = max(d.Waited, 0), d.Waited >= 0
	case d.Place == queue.Queued:
		v.status, v.id, v.hasID, v.position = visitQueued, d.Visitor, true, d.Status.Position
	case d.Outcome == room.Challenged:
		v.status = visitChallenge
	case d.Outcome == room.Rejected, d.Outcome == room.CrossSiteRefused, d.Outcome == room.TooMany, d.Outcome == room.KeyTooLong:
		v.status = visitRejected
	case d.Outcome == room.Degraded:
		v.status = visitUnavailable
	}
}

func (v *visit) placeholder(key string) (any, bool) {
	name, ok := strings.CutPrefix(key, placeholderPrefix)
	if !ok {
		return nil, false
	}
	switch name {
	case "room":
		return v.room, true
	case "status":
		return v.status, true
	case "visitor":
		if v.hasID {
			return v.id.String(), true
		}
		return "", true
	case "waited_seconds":
		if v.known {
			return int(v.waited / time.Second), true
		}
		return "", true
	case "position":
		if v.status == visitQueued {
			return v.position, true
		}
		return "", true
	case "capacity":
		return v.capacity, true
	case "keyed":
		return v.keyed, true
	}
	return nil, false
}
