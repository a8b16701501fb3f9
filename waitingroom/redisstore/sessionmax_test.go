package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// The admission times (the since key) follow the active set through every way a
// session ends (leave, session_ttl, session_max, reset), so Redis keeps nothing per
// visitor who has gone, with or without session_max.
func TestAdmissionTimesFollowTheActiveSet(t *testing.T) {
	srv := testredis.Start(t)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	s := open(t, mod)
	ctx := context.Background()
	t0 := time.UnixMilli(1_900_000_000_000)
	lim := queue.Limits{Capacity: 100, SessionTTL: time.Minute, QueueTTL: time.Minute}
	count := func(key string) string {
		t.Helper()
		n, err := srv.Do("ZCARD", key)
		if err != nil {
			t.Fatalf("ZCARD %s: %v", key, err)
		}
		return n
	}
	same := func(what, want string) {
		t.Helper()
		a, b := count(s.keys[1]), count(s.keys[11])
		if a != want || b != want {
			t.Fatalf("%s: active holds %s, since holds %s; want %s in both", what, a, b, want)
		}
	}
	ids := make([]queue.VisitorID, 6)
	for i := range ids {
		ids[i] = queue.NewVisitorID()
		at := t0
		if i >= 3 {
			at = t0.Add(50 * time.Second)
		}
		var st queue.Status
		var err error
		if i < len(ids)-1 {
			st, err = s.Join(ctx, ids[i], at, lim)
		} else { // the last comes with a pass: admitted by the pass's script
			st, _, err = s.JoinPass(ctx, ids[i], queue.PassUse{ID: "p", Uses: 1, Expires: at.Add(time.Hour)}, at, lim)
		}
		if err != nil || st.State != queue.Admitted {
			t.Fatalf("Join %d: %v, %v", i, st.State, err)
		}
	}
	same("six admitted, one with a pass", "6")
	if _, err := s.Leave(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	same("after a leave", "5")
	if _, err := s.Touch(ctx, ids[1], t0.Add(55*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(ctx, t0.Add(61*time.Second), lim); err != nil { // ids[2] idle past session_ttl
		t.Fatal(err)
	}
	same("after session_ttl", "4")
	lim.SessionMax = 80 * time.Second
	if _, err := s.Touch(ctx, ids[1], t0.Add(79*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(ctx, t0.Add(81*time.Second), lim); err != nil { // ids[1] past session_max
		t.Fatal(err)
	}
	same("after session_max", "3")
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	same("after a reset", "0")
}
