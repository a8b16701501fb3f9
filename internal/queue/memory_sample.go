package queue

import (
	"context"
	"sync"
)

// keptPeriods is how many control periods' samples the stores keep: the period
// being decided on and the few being reported to around it.
const keptPeriods = 4

// samples are the memory store's reports, by control period, under their own lock.
type samples struct {
	mu       sync.Mutex
	byPeriod map[int64]*Sample
}

func (s *MemoryStore) Report(_ context.Context, period int64, o Sample) error {
	m := &s.samples
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byPeriod == nil {
		m.byPeriod = map[int64]*Sample{}
	}
	for p := range m.byPeriod {
		if p <= period-keptPeriods {
			delete(m.byPeriod, p)
		}
	}
	sum := m.byPeriod[period]
	if sum == nil {
		sum = &Sample{}
		m.byPeriod[period] = sum
	}
	sum.Add(o)
	return nil
}

func (s *MemoryStore) Measured(_ context.Context, period int64) (Sample, error) {
	m := &s.samples
	m.mu.Lock()
	defer m.mu.Unlock()
	var out Sample
	if sum := m.byPeriod[period]; sum != nil {
		out.Add(*sum)
	}
	return out, nil
}
