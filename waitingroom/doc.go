// Package waitingroom implements the http.handlers.waiting_room Caddy module.
package waitingroom
