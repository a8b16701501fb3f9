package redisstore

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/fairness"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
	roomsettings "github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
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
			stores := instancesOn(mod)(t, 4)
			old, one, two := stores[0].(*roomStore), stores[1].(*roomStore), stores[2].(*roomStore)
			three := stores[3].(*roomStore)
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
			// A level-2 instance that renews its lease (its hub holds sockets) and
			// stops: a restart. Once its record lapses it is gone, and its lease, fresh
			// for a while yet, is not taken for an older release's.
			want("a second level-2 instance", fleet(three, 2, 80*time.Second), 2, 2)
			if err := three.Hold(ctx, nil, t0.Add(85*time.Second)); err != nil {
				t.Fatal(err)
			}
			want("the second one stopped, its record not lapsed", fleet(two, 2, 90*time.Second), 2, 2)
			want("the second one's record lapsed, its lease fresh", fleet(two, 2, 100*time.Second), 1, 2)
			want("and its lease lapsed too", fleet(two, 2, 150*time.Second), 1, 2)
			if n, err := two.shared.client.HLen(ctx, two.fleetKey()).Result(); err != nil || n != 1 {
				t.Fatalf("the fleet record holds %d instances (%v) once three have gone, want 1", n, err)
			}
		})
	}
}

// Instances of this release that start together (a fleet's first start, a rolling
// restart's) each see the others as readers of this level from their first record:
// none takes another's brand-new lease, written as it claims its slot, for an older
// release's. One that did would hold back what the new level writes (the counts by
// reason) until its next record, five seconds later.
func TestFleetInstancesStartingTogetherSeeNoOlderRelease(t *testing.T) {
	mod := provision(t, &Redis{URL: "redis://" + testredis.Start(t).Addr, Timeout: caddy.Duration(5 * time.Second)})
	live := queue.FleetWindows{Record: 15 * time.Second, Lease: time.Minute}
	const rounds, instances = 20, 6
	for round := range rounds {
		stores := instancesOn(mod)(t, instances)
		now := time.Now()
		got := make([]queue.Fleet, instances)
		errs := make([]error, instances)
		var start, done sync.WaitGroup
		start.Add(1)
		for i, st := range stores {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				got[i], errs[i] = st.Fleet(context.Background(), queue.FormatLevel, now, live)
			}()
		}
		start.Done()
		done.Wait()
		for i := range stores {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if got[i].Reads != queue.FormatLevel || got[i].Instances < 1 || got[i].Instances > instances {
				t.Fatalf("round %d, instance %d of %d starting together: %+v, want level %d read by every live one",
					round, i, instances, got[i], queue.FormatLevel)
			}
		}
	}
}

// The rule's step 2 for the draws (queue.FormatLevel 2): while an instance reading
// level 1 is live, a room on this release writes none of the draws' keys (no draw is
// committed; an event's lottery is drawn as the older release draws it, once) and
// counts no admission by reason; once that instance has gone, the next event's
// draw is committed and admissions are counted.
func TestDrawsAreNotWrittenWhileLevelOneIsLive(t *testing.T) {
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
			stores := instancesOn(mod)(t, 2)
			old, st := stores[0].(*roomStore), stores[1].(*roomStore)
			ctx := context.Background()
			clk := &fleetClock{now: time.Unix(1_800_000_000, 0)}
			t0 := clk.now
			event := func(start time.Time) roomsettings.Event {
				return roomsettings.Event{Start: start, End: start.Add(time.Hour), Prequeue: 30 * time.Minute, Shuffle: true}
			}
			first, second := event(t0.Add(10*time.Minute)), event(t0.Add(3*time.Hour))
			rm := room.New(&room.Config{
				Name: strings.TrimSuffix(strings.TrimPrefix(st.keys[0], "waiting_room:{"), "}:queue"),
				Config: roomsettings.Config{Runtime: roomsettings.Runtime{Capacity: 2, Mode: queue.ModeFIFO, SessionTTL: time.Hour,
					QueueTTL: time.Hour, AwayTTL: time.Hour}, Events: []roomsettings.Event{first, second}},
				Secrets:  [][]byte{[]byte("the fleet test's secret, of 32 bytes or more")},
				DrawPage: "/draw",
				Store:    st, Clock: clk, Metrics: nopMetrics{},
			})
			live := queue.FleetWindows{Record: 15 * time.Second, Lease: time.Hour}
			if _, err := old.Fleet(ctx, 1, clk.Now(), live); err != nil { // an instance of the previous release
				t.Fatal(err)
			}
			rm.Start(ctx)
			defer rm.Stop()
			visit := func() {
				t.Helper()
				var d room.Decision
				rm.Decide(ctx, &room.Visit{Now: clk.Now()}, &d)
				if d.Outcome != room.Admitted && d.Outcome != room.Queued {
					t.Fatalf("a visitor got outcome %d", d.Outcome)
				}
			}
			newKeys := func() []string {
				t.Helper()
				var found []string
				var mu sync.Mutex
				collect := func(ctx context.Context, c *redis.Client) error {
					for _, pattern := range []string{"draws", "draw:*", "admitted:*"} {
						keys, err := c.Keys(ctx, st.key(pattern)).Result()
						if err != nil {
							return err
						}
						mu.Lock()
						found = append(found, keys...)
						mu.Unlock()
					}
					return nil
				}
				var err error
				if cc, ok := st.shared.client.(*redis.ClusterClient); ok {
					err = cc.ForEachMaster(ctx, collect)
				} else {
					err = collect(ctx, st.shared.client.(*redis.Client))
				}
				if err != nil {
					t.Fatal(err)
				}
				if high, _ := st.shared.client.HExists(ctx, st.keys[2], "admitted_high").Result(); high {
					found = append(found, "meta admitted_high")
				}
				return found
			}
			// The first event, beside the level-1 instance, which keeps its record.
			step := func(d time.Duration) {
				clk.add(d)
				if _, err := old.Fleet(ctx, 1, clk.Now(), live); err != nil {
					t.Fatal(err)
				}
				rm.Tick(ctx)
			}
			visit()
			visit()
			for range 3 {
				step(time.Minute) // into the pre-queue
				visit()
			}
			if f := rm.Fleet(); f.Reads != 1 {
				t.Fatalf("the fleet reads %d beside a level-1 instance", f.Reads)
			}
			if got := newKeys(); len(got) > 0 {
				t.Fatalf("in the pre-queue beside a level-1 instance, the room wrote %v", got)
			}
			clk.set(first.Start)
			step(time.Second) // the start: the lottery as the older release draws it, and admissions
			if drawn, _ := st.shared.client.HExists(ctx, st.keys[2], "shuffled:"+first.Key()).Result(); !drawn {
				t.Fatal("the lottery beside a level-1 instance was not drawn")
			}
			if got := newKeys(); len(got) > 0 {
				t.Fatalf("after the start beside a level-1 instance, the room wrote %v", got)
			}
			// The level-1 instance stops; once its record and its lease (the lease of
			// its slot, as the room's queue_ttl reckons it) lapse, the fleet reads 2.
			clk.add(time.Hour)
			for range 4 {
				clk.add(10 * time.Second)
				rm.Tick(ctx)
			}
			if f := rm.Fleet(); f.Reads != 2 {
				t.Fatalf("the fleet reads %d once the level-1 instance has gone", f.Reads)
			}
			clk.set(second.Opens().Add(time.Minute))
			rm.Tick(ctx)
			visit()
			if info := rm.Draws().Current(); info == nil || info.ID != fairness.EventID(second.Start) {
				t.Fatalf("the next event's draw, alone at level 2: %+v", info)
			}
			clk.set(second.Start)
			for range 3 {
				rm.Tick(ctx)
				clk.add(time.Second)
			}
			got := newKeys()
			hour := st.key("admitted:" + strconv.FormatInt(second.Start.Unix()/3600, 10))
			if !slices.Contains(got, st.key("draws")) || !slices.Contains(got, st.drawKey(fairness.EventID(second.Start))) ||
				!slices.Contains(got, hour) {
				t.Fatalf("alone at level 2, the room wrote %v: want its draw and the admissions by reason", got)
			}
		})
	}
}

// fleetClock is a room's clock the test moves.
type fleetClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fleetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fleetClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *fleetClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// nopMetrics counts nothing.
type nopMetrics struct{}

func (nopMetrics) Admitted(int)                          {}
func (nopMetrics) Queued()                               {}
func (nopMetrics) Abandoned(int)                         {}
func (nopMetrics) Waited(time.Duration)                  {}
func (nopMetrics) Counters(*queue.Stats, int)            {}
func (nopMetrics) Measured(*queue.Sample, time.Duration) {}
func (nopMetrics) LatencyTarget(time.Duration)           {}
func (nopMetrics) NoShows(int)                           {}
func (nopMetrics) Handoff()                              {}
func (nopMetrics) AdmittedBy(queue.ByReason)             {}
