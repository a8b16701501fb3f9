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
