package queue

import (
	"context"
	"sync"
	"testing"
	"time"
)

// A save copies the visitors into the copy the last save made (memory_state.go): each
// save must still hold the line as it is then, as the line shrinks and grows, and
// saves made at once must not share the copy.
func TestSavesReuseTheirCopy(t *testing.T) {
	ctx := context.Background()
	s, now, lim := saleStore(t, 2_000)
	check := func(what string) {
		t.Helper()
		got, err := LoadMemoryStore(s.AppendState(nil, stateRoom, now), stateRoom, now)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		want, _ := s.Stats(ctx)
		if st, _ := got.Stats(ctx); st != want {
			t.Fatalf("%s: restored %+v, the store has %+v", what, st, want)
		}
	}
	check("first save")
	for i := s.head; i < len(s.slots) && s.waiting > 300; i++ {
		if v := s.slots[i]; v != nil {
			_, _ = s.Leave(ctx, v.id)
		}
	}
	check("the line shrunk")
	for range 5_000 {
		_, _ = s.Join(ctx, NewVisitorID(), now, lim)
	}
	check("the line grew")

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				id := NewVisitorID()
				_, _ = s.Join(ctx, id, now, lim)
				_, _ = s.Leave(ctx, id)
			}
		}
	})
	var saves sync.WaitGroup
	for range 4 {
		saves.Go(func() {
			for range 5 {
				if _, err := LoadMemoryStore(s.AppendState(nil, stateRoom, now), stateRoom, now.Add(time.Second)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	saves.Wait()
	close(stop)
	wg.Wait()
}
