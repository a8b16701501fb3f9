// Package caddywaitingroom registers the waiting room modules with Caddy. Build Caddy with
//
//	xcaddy build --with github.com/caddy-waitingroom/caddy-waitingroom
//
// to get the http.handlers.waiting_room handler (and its Caddyfile directive), its
// stores (memory, redis) and the admin API (admin.api.waiting_room).
package caddywaitingroom

import (
	_ "github.com/caddy-waitingroom/caddy-waitingroom/admin"
	_ "github.com/caddy-waitingroom/caddy-waitingroom/waitingroom"
	_ "github.com/caddy-waitingroom/caddy-waitingroom/waitingroom/memorystore"
	_ "github.com/caddy-waitingroom/caddy-waitingroom/waitingroom/redisstore"
)
