package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// Restarting is a memory store that restarts from its saved state before every call
// (see restarting): the suite, and the hostile sale (internal/room), run on it to
// show that nothing a call leaves behind is missing from the state file.
func Restarting(t testing.TB) queue.Store {
	return &restarting{t: t, s: queue.NewMemoryStore(), subs: map[int]func([]queue.VisitorID){}}
}

// restarting is a memory store that restarts from its saved state before every
// call, at the call's time when it has one (else the last call's): no time passes
// between the save and the restore, so every answer must be the same as if the store
// had never gone. Above bigRoom visitors it restarts every 64th call only, so the
// suite's long lines stay quick (a restart walks the whole room).
type restarting struct {
	t     testing.TB
	mu    sync.Mutex
	s     *queue.MemoryStore
	now   time.Time
	calls int

	subsMu sync.Mutex
	subs   map[int]func([]queue.VisitorID)
	next   int
	cancel func()
}

const bigRoom = 256

// store restarts the store at now and returns it, locked until the call's done:
// each method unlocks it after its call, so no call reaches a store already replaced.
func (r *restarting) store(now time.Time) *queue.MemoryStore {
	r.mu.Lock()
	if !now.IsZero() {
		r.now = now
	}
	r.calls++
	st, _ := r.s.Stats(context.Background())
	if st.Active+st.Waiting+st.Away > bigRoom && r.calls%64 != 0 {
		return r.s
	}
	draws := r.s.AppendDraws(nil, "restarting") // before the state, as the module saves them
	body := r.s.AppendState(nil, "restarting", r.now)
	s, err := queue.LoadMemoryStoreWithDraws(body, draws, "restarting", r.now)
	if err != nil {
		r.t.Fatalf("restoring the state the store saved: %v", err)
	}
	if again := s.AppendState(nil, "restarting", r.now); string(again) != string(body) {
		r.t.Fatalf("the restored store saves %d bytes that differ from the %d it was restored from", len(again), len(body))
	}
	if again := s.AppendDraws(nil, "restarting"); string(again) != string(draws) {
		r.t.Fatalf("the restored store saves %d bytes of draws that differ from the %d it was restored from", len(again), len(draws))
	}
	if r.cancel != nil {
		r.cancel()
	}
	r.cancel = s.Subscribe(r.announce)
	r.s = s
	return s
}

func (r *restarting) announce(ids []queue.VisitorID) {
	r.subsMu.Lock()
	defer r.subsMu.Unlock()
	for _, fn := range r.subs {
		fn(ids)
	}
}

var _ queue.Store = (*restarting)(nil)

func (r *restarting) Join(ctx context.Context, id queue.VisitorID, now time.Time, lim queue.Limits) (queue.Status, error) {
	s := r.store(now)
	defer r.mu.Unlock()
	return s.Join(ctx, id, now, lim)
}

func (r *restarting) JoinPass(ctx context.Context, id queue.VisitorID, p queue.PassUse, now time.Time, lim queue.Limits) (queue.Status, bool, error) {
	s := r.store(now)
	defer r.mu.Unlock()
	return s.JoinPass(ctx, id, p, now, lim)
}

func (r *restarting) Status(ctx context.Context, id queue.VisitorID, now time.Time) (queue.Status, error) {
	s := r.store(now)
	defer r.mu.Unlock()
	return s.Status(ctx, id, now)
}

func (r *restarting) Listen(ctx context.Context, id queue.VisitorID, now time.Time) (queue.Status, error) {
	s := r.store(now)
	defer r.mu.Unlock()
	return s.Listen(ctx, id, now)
}

func (r *restarting) Touch(ctx context.Context, id queue.VisitorID, now time.Time) (bool, error) {
	s := r.store(now)
	defer r.mu.Unlock()
	return s.Touch(ctx, id, now)
}

func (r *restarting) Move(ctx context.Context, from, to queue.VisitorID, now time.Time, lim queue.Limits) (queue.Status, bool, error) {
	s := r.store(now)
	defer r.mu.Unlock()
	return s.Move(ctx, from, to, now, lim)
}

func (r *restarting) Heartbeat(ctx context.Context, ids []queue.VisitorID, now time.Time) error {
	s := r.store(now)
	defer r.mu.Unlock()
	return s.Heartbeat(ctx, ids, now)
}

func (r *restarting) Leave(ctx context.Context, id queue.VisitorID) (bool, error) {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.Leave(ctx, id)
}

func (r *restarting) Step(ctx context.Context, now time.Time, lim queue.Limits) (queue.StepResult, error) {
	s := r.store(now)
	defer r.mu.Unlock()
	return s.Step(ctx, now, lim)
}

func (r *restarting) AdmitNow(ctx context.Context, n int, now time.Time, lim queue.Limits) (queue.StepResult, error) {
	s := r.store(now)
	defer r.mu.Unlock()
	return s.AdmitNow(ctx, n, now, lim)
}

func (r *restarting) Shuffle(ctx context.Context, key string) (bool, error) {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.Shuffle(ctx, key)
}

func (r *restarting) Reset(ctx context.Context) error {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.Reset(ctx)
}

func (r *restarting) Overrides(ctx context.Context) ([]byte, error) {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.Overrides(ctx)
}

func (r *restarting) SwapOverrides(ctx context.Context, old, doc []byte) (bool, error) {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.SwapOverrides(ctx, old, doc)
}

func (r *restarting) Positions(ctx context.Context, tickets []uint64, out []int) error {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.Positions(ctx, tickets, out)
}

func (r *restarting) Stats(ctx context.Context) (queue.Stats, error) {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.Stats(ctx)
}

func (r *restarting) Secret(ctx context.Context, candidate []byte) ([]byte, error) {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.Secret(ctx, candidate)
}

func (r *restarting) Once(ctx context.Context, key string, until time.Time) (bool, error) {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.Once(ctx, key, until)
}

func (r *restarting) Report(ctx context.Context, period int64, sample queue.Sample) error {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.Report(ctx, period, sample)
}

func (r *restarting) Measured(ctx context.Context, period int64) (queue.Sample, error) {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.Measured(ctx, period)
}

func (r *restarting) Subscribe(fn func([]queue.VisitorID)) func() {
	r.subsMu.Lock()
	defer r.subsMu.Unlock()
	n := r.next
	r.next++
	r.subs[n] = fn
	return func() {
		r.subsMu.Lock()
		defer r.subsMu.Unlock()
		delete(r.subs, n)
	}
}

func (r *restarting) Fleet(ctx context.Context, reads int, now time.Time, live queue.FleetWindows) (queue.Fleet, error) {
	s := r.store(now)
	defer r.mu.Unlock()
	return s.Fleet(ctx, reads, now, live)
}

func (r *restarting) CommitDraw(ctx context.Context, rec queue.DrawRecord) (queue.DrawRecord, error) {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.CommitDraw(ctx, rec)
}

func (r *restarting) Draw(ctx context.Context, id string) (queue.DrawRecord, bool, error) {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.Draw(ctx, id)
}

func (r *restarting) CloseDraw(ctx context.Context, id string) (queue.DrawRecord, error) {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.CloseDraw(ctx, id)
}

func (r *restarting) DrawEntrants(ctx context.Context, id string, dst []uint64) ([]uint64, error) {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.DrawEntrants(ctx, id, dst)
}

func (r *restarting) PlaceDraw(ctx context.Context, id string, done int, from []uint64) (queue.DrawRecord, error) {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.PlaceDraw(ctx, id, done, from)
}

func (r *restarting) Present(ctx context.Context, dst []uint64) ([]uint64, error) {
	s := r.store(time.Time{})
	defer r.mu.Unlock()
	return s.Present(ctx, dst)
}

func (r *restarting) Admissions(ctx context.Context, since, now time.Time) ([]queue.Minute, error) {
	s := r.store(now)
	defer r.mu.Unlock()
	return s.Admissions(ctx, since, now)
}
