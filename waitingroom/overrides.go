package waitingroom

import (
	"context"
	"encoding/json"
	"fmt"
)

// saveAttempts bounds how often a PATCH merges again because another one was saved
// first. Each refusal means another change landed, so only a storm of changes
// exhausts it, and then this one changes nothing and says so.
const saveAttempts = 100

// saveOverrides merges a PATCH into the runtime settings in the store and returns
// what it saved: the fields named take their values in patch (nil restores the
// configured value), the others keep what the store holds. The write is a
// compare-and-swap on what was read (queue.Store.SwapOverrides), so a PATCH saved
// meanwhile by another operator, on this instance or any other sharing the store, is
// merged with, never overwritten. Timings that contradict each other once merged
// are refused (checkSessions) and then nothing changes.
func (r control) saveOverrides(ctx context.Context, fields map[string]json.RawMessage, patch overrides) (overrides, error) {
	// The fields patch sets, as JSON; a named field missing here is restored.
	var set map[string]json.RawMessage
	b, _ := json.Marshal(patch)
	_ = json.Unmarshal(b, &set)
	for range saveAttempts {
		old, err := r.h.store.Overrides(ctx)
		if err != nil {
			return overrides{}, fmt.Errorf("reading runtime settings: %w", err)
		}
		merged := map[string]json.RawMessage{}
		if len(old) > 0 {
			if err := json.Unmarshal(old, &merged); err != nil {
				return overrides{}, fmt.Errorf("reading runtime settings: %w", err)
			}
		}
		for name := range fields {
			if v, ok := set[name]; ok {
				merged[name] = v
			} else {
				delete(merged, name)
			}
		}
		var o overrides
		b, _ := json.Marshal(merged)
		if err := json.Unmarshal(b, &o); err != nil {
			return overrides{}, fmt.Errorf("reading runtime settings: %w", err)
		}
		if err := r.h.checkSessions(&o); err != nil {
			return overrides{}, err
		}
		var doc []byte
		if o != (overrides{}) {
			doc, _ = json.Marshal(o)
		}
		swapped, err := r.h.store.SwapOverrides(ctx, old, doc)
		if err != nil {
			return overrides{}, fmt.Errorf("saving runtime settings: %w", err)
		}
		if swapped {
			return o, nil
		}
	}
	return overrides{}, fmt.Errorf("saving runtime settings: other changes were saved %d times while this one was merged; nothing changed, try again", saveAttempts)
}
