package waitingroom

import (
	"slices"
	"sort"
	"sync"
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
func LookupRoom(name string) (AdminRoom, bool) {
	registry.Lock()
	defer registry.Unlock()
	hs := registry.rooms[name]
	if len(hs) == 0 {
		return nil, false
	}
	return control{h: hs[len(hs)-1]}, true
}

// Rooms returns every running room, sorted by name, for the admin API.
func Rooms() []AdminRoom {
	registry.Lock()
	defer registry.Unlock()
	names := make([]string, 0, len(registry.rooms))
	for name := range registry.rooms {
		names = append(names, name)
	}
	sort.Strings(names)
	rooms := make([]AdminRoom, 0, len(names))
	for _, name := range names {
		hs := registry.rooms[name]
		rooms = append(rooms, control{h: hs[len(hs)-1]})
	}
	return rooms
}
