package waitingroom

// Room is a running room as the admin API sees it: a handle on the newest handler of
// that name, reading and steering the shared store.
type Room struct {
	h *Handler
}

// Name is the room's name.
func (r *Room) Name() string { return r.h.Name }
