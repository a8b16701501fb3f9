// Command caddy is Caddy with the standard modules and the waiting room, built by the
// multi-instance tests so that several real Caddy processes can share one store.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/caddy-waitingroom/caddy-waitingroom"
)

func main() {
	caddycmd.Main()
}
