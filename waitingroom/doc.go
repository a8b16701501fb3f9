// Package waitingroom is the http.handlers.waiting_room Caddy module: the adapter
// between Caddy and the room engine in internal/room, which imports no Caddy.
//
// The module maps Caddy's configuration onto the engine and each request into it;
// the engine decides what the request gets (Room.Decide) and the module turns that
// decision into the response. What is where:
//
//   - waitingroom.go: the Handler (its JSON fields are the manual on caddyserver.com),
//     Provision, Validate and Cleanup; config.go the rate, event, per-address and
//     adapt types.
//   - caddyfile.go: the Caddyfile's waiting_room directive.
//   - serve.go: ServeHTTP as translation (the request's facts, the room's decision,
//     the answer) and the watcher of what the shop answers an admitted visitor (its
//     revoke command, its time to first byte).
//   - respond.go: the answers, written by internal/page, with what only Caddy knows of
//     the request (its original address, its scheme behind a trusted proxy, the
//     encodings it takes), and the 429s that handle_errors can restyle.
//   - placeholders.go: {http.waiting_room.*}; metrics.go: the Prometheus metrics.
//   - registry.go: the running rooms of this process, for the admin API (admin/).
//   - store.go: the store modules' interface; the memory store is memorystore/, the
//     Redis one redisstore/.
//   - command.go: `caddy waiting-room rehearse`, which plays a sale in internal/rehearse.
package waitingroom
