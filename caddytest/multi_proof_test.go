package caddytest

import (
	"sync"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// TestMultiProofIsAcceptedOnceFleetWide: two instances on one Redis. A challenge
// minted by one is answered on the other (the room's secret is shared through the
// store); the same proof is then refused on both, and of many guests sending one
// fresh proof to both instances at once exactly one gets a place. A PATCH on one
// instance turns the check off on the other.
func TestMultiProofIsAcceptedOnceFleetWide(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	f := startFleet(t, 2, func(int) string {
		return roomBlock(room, "/shop*", 1000, "redis redis://"+srv.Addr, "proof_of_work 8")
	})
	a, b := f.nodes[0], f.nodes[1]

	status, c, err := askWithProof(a.base, "/shop", "")
	if err != nil || status != "challenge" || c.Difficulty != 8 || c.Room != room {
		t.Fatalf("new visitor on %s: %q %+v %v", a.name, status, c, err)
	}
	proof := solveChallenge(t, c)
	if status, _, err := askWithProof(b.base, "/shop", proof); err != nil || status != "admitted" {
		t.Fatalf("proof of %s's challenge on %s: %q %v, want admitted", a.name, b.name, status, err)
	}
	for _, nd := range []*node{a, b} {
		status, fresh, err := askWithProof(nd.base, "/shop", proof)
		if err != nil || status != "challenge" || fresh.Challenge == c.Challenge {
			t.Fatalf("replay on %s: %q %v, want a fresh challenge", nd.name, status, err)
		}
	}

	// One fresh proof, sent by 20 guests to both instances at once.
	_, c2, err := askWithProof(b.base, "/shop", "")
	if err != nil {
		t.Fatal(err)
	}
	race := solveChallenge(t, c2)
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for i := range 40 {
		nd := f.nodes[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _, err := askWithProof(nd.base, "/shop", race)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				got["error"]++
				t.Errorf("racing guest on %s: %v", nd.name, err)
				return
			}
			got[status]++
		}()
	}
	wg.Wait()
	t.Logf("40 guests with one proof on two instances: %v", got)
	if got["admitted"]+got["queued"] != 1 || got["challenge"] != 39 {
		t.Fatalf("40 guests with one proof on two instances: %v, want exactly one place and 39 challenges", got)
	}

	patchFleetRoom(t, a, room, `{"proof_of_work": 0}`)
	waitFor(t, b.name+" to stop asking for a proof", func() bool {
		status, _, err := askWithProof(b.base, "/shop", "")
		return err == nil && status == "admitted"
	})
	f.requireUp()
}
