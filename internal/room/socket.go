package room

import (
	"net/http"
)

// ServeSocket hands a queued waiter's WebSocket (d from Decide) to the room's hub,
// within the per-address cap on open sockets; refused says the cap was reached and
// nothing was served, and the module answers that.
func (rm *Room) ServeSocket(w http.ResponseWriter, r *http.Request, d *Decision, addr string) (refused bool, err error) {
	var release func()
	if cap := rm.cfg.PerIP.MaxConnections; cap > 0 {
		if !rm.ips.openConn(addr, cap) {
			return true, nil
		}
		release = func() { rm.ips.closeConn(addr) }
	}
	return false, rm.hub.Serve(w, r, d.Visitor, d.Status, release)
}

// TellAdmitted answers the WebSocket of a waiter just admitted that it is in.
func (rm *Room) TellAdmitted(w http.ResponseWriter, r *http.Request) error {
	return rm.hub.ServeAdmitted(w, r)
}
