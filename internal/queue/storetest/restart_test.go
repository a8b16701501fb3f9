package storetest_test

import (
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue/storetest"
)

// The memory store passes the whole suite when it is saved and restored from its
// state between every two calls: whatever a call leaves behind, the state file
// holds it, so nothing a restart loses can go unseen by a case of the suite.
func TestMemoryStoreRestartedBetweenCalls(t *testing.T) {
	storetest.Run(t, func(t *testing.T) queue.Store { return storetest.Restarting(t) })
}
