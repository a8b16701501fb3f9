module github.com/caddy-waitingroom/caddy-waitingroom

go 1.26.0
