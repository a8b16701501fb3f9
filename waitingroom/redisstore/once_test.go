package redisstore

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// A once key lives in the room's hash slot and expires, by Redis's clock, at the
// instant the caller gave; a second instance's store on the same room refuses it.
func TestOnceKeyIsInTheRoomSlotAndExpiresAtUntil(t *testing.T) {
	srv := testredis.Start(t)
	a := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	b := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	s := open(t, a)
	room := strings.TrimSuffix(strings.TrimPrefix(s.keys[0], "waiting_room:{"), "}:queue")
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	other, release, err := b.OpenStore(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	defer release()

	until := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	if ok, err := s.Once(ctx, "abc", until); err != nil || !ok {
		t.Fatalf("first offer: %v, %v", ok, err)
	}
	if ok, err := other.Once(ctx, "abc", until); err != nil || ok {
		t.Fatalf("offer on another instance: %v, %v, want refused", ok, err)
	}
	key := s.onceKey("abc")
	if !strings.HasPrefix(key, "waiting_room:{"+room+"}:") {
		t.Fatalf("once key %q is not in the room's hash slot", key)
	}
	at, err := srv.Do("PEXPIRETIME", key)
	if err != nil {
		t.Fatal(err)
	}
	if at != strconv.FormatInt(until.UnixMilli(), 10) {
		t.Fatalf("once key expires at %s, want %d", at, until.UnixMilli())
	}
}

// Redis has no count limit to reach: after a flood of distinct proofs every key still
// carries its expiry (Redis forgets each at its instant, by its own clock) and a fresh
// proof is accepted, so a flood costs Redis memory for one challenge life and never
// locks visitors out.
func TestOnceFloodLeavesNoKeyWithoutExpiryAndAcceptsFreshProofs(t *testing.T) {
	srv := testredis.Start(t)
	s := open(t, provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)}))
	ctx := context.Background()
	until := time.Now().Add(time.Minute)
	const flood = 5000
	for i := range flood {
		if ok, err := s.Once(ctx, "flood"+strconv.Itoa(i), until); err != nil || !ok {
			t.Fatalf("distinct proof %d of the flood: %v, %v", i, ok, err)
		}
	}
	if ok, err := s.Once(ctx, "a real visitor", until); err != nil || !ok {
		t.Fatalf("a fresh proof after a flood of %d: %v, %v", flood, ok, err)
	}
	// How many once keys there are, and how many of them would never expire.
	counts, err := srv.Do("EVAL", `local n, forever = 0, 0
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
  n = n + 1
  if redis.call('PTTL', k) < 0 then forever = forever + 1 end
end
return n .. ' ' .. forever`, "0", s.onceKey("*"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(flood+1) + " 0"; counts != want {
		t.Fatalf("once keys and keys without expiry: %q, want %q", counts, want)
	}
}
