package waitingroom

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/history"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
)

// registry holds the running rooms of this process by name, for the admin API, which
// keeps no state of its own. Several handlers may share a name (two sites with one room,
// or the old and new config during a reload); they share one store, so any of them can
// answer for the room. The newest is preferred: it carries the current configuration.
var registry = struct {
	sync.Mutex
	rooms map[string][]*Handler
}{rooms: make(map[string][]*Handler)}

func register(h *Handler) {
	registry.Lock()
	defer registry.Unlock()
	registry.rooms[h.Name] = append(registry.rooms[h.Name], h)
}

func unregister(h *Handler) {
	registry.Lock()
	defer registry.Unlock()
	hs := slices.DeleteFunc(registry.rooms[h.Name], func(x *Handler) bool { return x == h })
	if len(hs) == 0 {
		delete(registry.rooms, h.Name)
		deleteRoomMetrics(h.Name)
		return
	}
	registry.rooms[h.Name] = hs
}

// LookupRoom returns the running room of that name, for the admin API.
func LookupRoom(name string) (*room.Room, bool) {
	registry.Lock()
	defer registry.Unlock()
	hs := registry.rooms[name]
	if len(hs) == 0 {
		return nil, false
	}
	return hs[len(hs)-1].room, true
}

// Rooms returns every running room, sorted by name, for the admin API.
func Rooms() []*room.Room {
	registry.Lock()
	defer registry.Unlock()
	names := slices.Sorted(maps.Keys(registry.rooms))
	rooms := make([]*room.Room, 0, len(names))
	for _, name := range names {
		hs := registry.rooms[name]
		rooms = append(rooms, hs[len(hs)-1].room)
	}
	return rooms
}

// siblings are the running rooms of name in this process: a change made through one
// applies to all of them at once.
func siblings(name string) []*room.Room {
	registry.Lock()
	defer registry.Unlock()
	hs := registry.rooms[name]
	rooms := make([]*room.Room, 0, len(hs))
	for _, h := range hs {
		if h.room != nil {
			rooms = append(rooms, h.room)
		}
	}
	return rooms
}

// histories keeps each room's history across config reloads, as the memory store keeps
// its line: a reload on sale day must not blank the console's last hour.
var histories = caddy.NewUsagePool()

func loadHistory(name string) *history.History {
	v, _, _ := histories.LoadOrNew(name, func() (caddy.Destructor, error) { return history.New(), nil })
	return v.(*history.History)
}

func releaseHistory(name string) { _, _ = histories.Delete(name) }

// checkCookieName refuses h if another room of its config sends a cookie of the same
// name: a browser keeps one cookie per name (and host; ports do not count, and a
// cookie domain joins hosts), so each room would overwrite the other's, and a visitor
// of one would lose the place in the other and leave a ghost place behind. Handlers of
// one name are one room and share their cookie on purpose. Rooms of other configs (the
// old one during a reload) are not in the way.
func checkCookieName(h *Handler) error {
	if h.config == nil {
		return nil
	}
	registry.Lock()
	defer registry.Unlock()
	// In name order: the same answer every time when several rooms collide.
	for _, name := range slices.Sorted(maps.Keys(registry.rooms)) {
		if name == h.Name {
			continue
		}
		for _, other := range registry.rooms[name] {
			if other.config == h.config && other.Cookie.Name == h.Cookie.Name {
				return fmt.Errorf("rooms %q and %q both use the cookie %q: a visitor of one would lose the place in the other; give one its own cookie name (cookie { name ... })",
					h.Name, other.Name, h.Cookie.Name)
			}
		}
	}
	return nil
}
