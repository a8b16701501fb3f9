// Package waitingroom is the http.handlers.waiting_room Caddy module: the adapter
// between Caddy and the room engine in internal/room, which imports no Caddy.
//
// The module maps Caddy's configuration onto the engine and each request into it;
// the engine decides what the request gets (Room.Decide) and the module turns that
// decision into the response. What is where:
//
//   - waitingroom.go: the Handler (its JSON fields are the manual on caddyserver.com),
//     Provision, Validate and Cleanup; config.go the rate and event types.
//   - caddyfile.go: the Caddyfile's waiting_room directive.
//   - serve.go: ServeHTTP as translation (the request's facts, the room's decision,
//     the answer) and the watcher of an upstream's revoke command.
//   - respond.go: the waiting page, JSON and the challenge page; redirect.go keeps
//     every redirect on the site; sharedcache.go keeps an answer that carries the
//     room's cookie out of shared caches; encoding.go picks gzip as Caddy does.
//   - pass.go, proof.go, address.go: what a request carries that never goes upstream
//     (a pass, a proof of work) and how it is taken out of the address.
//   - crossorigin.go: CORS preflights, which are nobody's visit; perip.go the
//     per-address caps' configuration, the client's address and the 429 answer.
//   - placeholders.go: {http.waiting_room.*}; metrics.go: the Prometheus metrics.
//   - registry.go: the running rooms of this process, for the admin API (admin/).
//   - store.go, memory_module.go: the store modules' interface and the embedded
//     memory store (the Redis one is in redisstore/).
package waitingroom
