package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// The fleet record on a real Redis, standalone and Cluster: three instances of one
// room, one of a release from before the record (it renews its lease and records
// nothing), one reading level 1 and one level 2. The fleet reads the lowest level
// while any instance that reads less is live, and the higher one once its lease has
// lapsed: a release may write the new format only then.
func TestFleetReadsTheLowestLiveLevel(t *testing.T) {
	for name, addrs := range map[string]func(t *testing.T) *Redis{
		"standalone": func(t *testing.T) *Redis {
			return &Redis{URL: "redis://" + testredis.Start(t).Addr, Timeout: caddy.Duration(5 * time.Second)}
		},
		"cluster": func(t *testing.T) *Redis {
			return &Redis{Addresses: testredis.StartCluster(t).Addrs, Timeout: caddy.Duration(5 * time.Second)}
		},
	} {
		t.Run(name, func(t *testing.T) {
			mod := provision(t, addrs(t))
			stores := instancesOn(mod)(t, 3)
			old, one, two := stores[0].(*roomStore), stores[1].(*roomStore), stores[2].(*roomStore)
			ctx, t0 := context.Background(), time.Unix(1_800_000_000, 0)
			live := queue.FleetWindows{Record: 15 * time.Second, Lease: time.Minute}
			fleet := func(s *roomStore, reads int, at time.Duration) queue.Fleet {
				t.Helper()
				f, err := s.Fleet(ctx, reads, t0.Add(at), live)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
			want := func(what string, got queue.Fleet, instances, reads int) {
				t.Helper()
				if got != (queue.Fleet{Instances: instances, Reads: reads}) {
					t.Fatalf("%s: %+v, want %d instances reading level %d", what, got, instances, reads)
				}
			}

			want("the first instance alone", fleet(two, 2, 0), 1, 2)
			if err := old.Hold(ctx, nil, t0); err != nil { // a release without the record: a lease only
				t.Fatal(err)
			}
			want("beside a release without the record", fleet(two, 2, time.Second), 2, 1)
			want("level 1 beside them, seen by level 1", fleet(one, 1, 2*time.Second), 3, 1)
			want("and seen by level 2", fleet(two, 2, 10*time.Second), 3, 1)
			// The old release stops: it is live until its lease lapses, a minute after
			// its last renewal; level 1 is still live.
			fleet(one, 1, 61*time.Second)
			want("once the old release's lease lapsed", fleet(two, 2, 61*time.Second), 2, 1)
			// Level 1 stops too: live until its record lapses.
			want("level 1 stopped, its record not lapsed", fleet(two, 2, 70*time.Second), 2, 1)
			want("once every live instance reads level 2", fleet(two, 2, 77*time.Second), 1, 2)
			if n, err := two.shared.client.HLen(ctx, two.fleetKey()).Result(); err != nil || n != 1 {
				t.Fatalf("the fleet record holds %d instances (%v) once two have gone, want 1", n, err)
			}
		})
	}
}
