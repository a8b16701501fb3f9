package room

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// The runtime settings' overrides (settings.Overrides) are kept in the room's store,
// so every instance sharing it reads them within a tick.

// readOverrides reads the runtime settings document from the store.
func (rm *Room) readOverrides(ctx context.Context) (settings.Overrides, error) {
	var o settings.Overrides
	doc, err := rm.cfg.Store.Overrides(ctx)
	if err != nil {
		return o, fmt.Errorf("reading runtime settings: %w", err)
	}
	if len(doc) > 0 {
		if err := json.Unmarshal(doc, &o); err != nil {
			return o, fmt.Errorf("reading runtime settings: %w", err)
		}
	}
	return o, nil
}

// loadOverrides reads the overrides and settles the room's settings on them. A
// document this version cannot read is logged and ignored, never applied halfway.
func (rm *Room) loadOverrides(ctx context.Context) error {
	doc, err := rm.cfg.Store.Overrides(ctx)
	if err != nil {
		return err
	}
	var o settings.Overrides
	if len(doc) > 0 {
		if err := json.Unmarshal(doc, &o); err != nil {
			rm.cfg.Logger.Error("ignoring unreadable runtime settings", zap.String("room", rm.cfg.Name), zap.Error(err))
			o = settings.Overrides{}
		}
	}
	rm.settle(o)
	return nil
}

// saveAttempts bounds how often a PATCH merges again because another one was saved
// first. Each refusal means another change landed, so only a storm of changes
// exhausts it, and then this one changes nothing and says so.
const saveAttempts = 100

// saveOverrides merges a PATCH into the runtime settings in the store and returns
// what it saved: the fields named take their values in patch (nil restores the
// configured value), the others keep what the store holds. Through changeOverrides,
// a PATCH saved meanwhile by another operator, on this instance or any other sharing
// the store, is merged with, never overwritten. Timings that contradict each other
// once merged are refused (settings.CheckOverrides) and then nothing changes.
func (rm *Room) saveOverrides(ctx context.Context, fields map[string]json.RawMessage, patch settings.Overrides) (settings.Overrides, error) {
	saved, _, err := rm.changeOverrides(ctx, func(was settings.Overrides, doc map[string]json.RawMessage) (bool, error) {
		settings.Merge(&rm.cfg.Config, rm.cfg.Clock.Now(), fields, patch, was, doc)
		return true, nil
	})
	return saved, err
}

// changeOverrides reads the runtime settings document, lets change edit it (its
// fields as JSON, beside what they were), and writes it back: a compare-and-swap on
// what was read (queue.Store.SwapOverrides), so when another writer saved first it
// reads and changes again, and concurrent changes of different fields all survive.
// change returns false to write nothing. changeOverrides returns what the document
// holds after it, and whether it wrote.
func (rm *Room) changeOverrides(ctx context.Context, change func(was settings.Overrides, doc map[string]json.RawMessage) (bool, error)) (settings.Overrides, bool, error) {
	for range saveAttempts {
		old, err := rm.cfg.Store.Overrides(ctx)
		if err != nil {
			return settings.Overrides{}, false, fmt.Errorf("reading runtime settings: %w", err)
		}
		doc := map[string]json.RawMessage{}
		var was settings.Overrides
		if len(old) > 0 {
			if err := errors.Join(json.Unmarshal(old, &doc), json.Unmarshal(old, &was)); err != nil {
				return settings.Overrides{}, false, fmt.Errorf("reading runtime settings: %w", err)
			}
		}
		write, err := change(was, doc)
		if err != nil || !write {
			return was, false, err
		}
		var o settings.Overrides
		b, _ := json.Marshal(doc)
		if err := json.Unmarshal(b, &o); err != nil {
			return settings.Overrides{}, false, fmt.Errorf("reading runtime settings: %w", err)
		}
		if err := settings.CheckOverrides(&rm.cfg.Config, &o, rm.cfg.Clock.Now()); err != nil {
			return settings.Overrides{}, false, inputError{err}
		}
		var saved []byte
		if o != (settings.Overrides{}) {
			saved, _ = json.Marshal(o)
		}
		swapped, err := rm.cfg.Store.SwapOverrides(ctx, old, saved)
		if err != nil {
			return settings.Overrides{}, false, fmt.Errorf("saving runtime settings: %w", err)
		}
		if swapped {
			return o, true, nil
		}
	}
	return settings.Overrides{}, false, fmt.Errorf("saving runtime settings: other changes were saved %d times while this one was merged; nothing changed, try again", saveAttempts)
}
