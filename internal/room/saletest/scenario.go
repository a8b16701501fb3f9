package saletest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// scenario is what one seed draws: the room's settings, the fleet's size and the cast.
type scenario struct {
	instances int
	cfg       room.Config
	honest    int // of whom sleepers sleep now and then
	sleepers  int
	bots      int
	accounts  int
	handoffs  int
	// With adapt, the shop's servers and service time, and the flooders.
	servers  int
	service  time.Duration
	flooders int
}

// draw makes seed's scenario. Every feature is on in some seeds and off in others,
// and most seeds mix most of them.
func draw(rng *rand.Rand) scenario {
	sc := scenario{instances: 1 + rng.IntN(3)}
	c := &sc.cfg
	c.Capacity = 1 + rng.IntN(4)
	c.Secrets = [][]byte{[]byte("the hostile sale's own secret, 32+ bytes")}
	c.SessionTTL = settings.MinSessionTTL + time.Duration(rng.IntN(20))*time.Second
	c.QueueTTL = settings.MinQueueTTL + time.Duration(rng.IntN(10))*time.Second
	if rng.IntN(3) > 0 {
		c.AwayTTL = c.QueueTTL + time.Duration(5+rng.IntN(55))*time.Second
	}
	if rng.IntN(2) == 0 {
		c.SessionMax = settings.MinSessionMax + time.Duration(rng.IntN(30))*time.Second
	}
	if rng.IntN(3) > 0 {
		for c.ArriveTTL = settings.MinArriveTTL; settings.CheckArrive(c.QueueTTL, c.ArriveTTL) != nil; c.ArriveTTL += time.Second {
		}
		c.ArriveTTL += time.Duration(rng.IntN(8)) * time.Second
	}
	if rng.IntN(5) == 0 {
		c.Rate = settings.Rate{Count: 1 + rng.IntN(3), Per: time.Duration(1+rng.IntN(5)) * time.Second}
	}
	sc.honest = 3 + rng.IntN(10)
	sc.sleepers = rng.IntN(sc.honest/2 + 1)
	sc.bots = rng.IntN(5)
	sc.accounts = rng.IntN(4)
	sc.handoffs = rng.IntN(3)
	if rng.IntN(3) == 0 {
		a := capacity.Targets{Latency: 300 * time.Millisecond, Errors: capacity.DefaultErrors}.WithDefaults(c.Capacity)
		c.Adapt = &a
		sc.servers = 1 + rng.IntN(3)
		sc.service = time.Duration(50+rng.IntN(600)) * time.Millisecond
		sc.flooders = rng.IntN(3)
	}
	return sc
}

func (sc scenario) String() string {
	c := sc.cfg
	return fmt.Sprintf("%d instances, capacity %d, rate %d/%v, session_ttl %v, queue_ttl %v, away_ttl %v, session_max %v, arrive_ttl %v; "+
		"%d honest (%d sleep), %d bots, %d keyed accounts, %d hand-offs",
		sc.instances, c.Capacity, c.Rate.Count, c.Rate.Per, c.SessionTTL, c.QueueTTL, c.AwayTTL, c.SessionMax, c.ArriveTTL,
		sc.honest, sc.sleepers, sc.bots, sc.accounts, sc.handoffs) + sc.adapt()
}

func (sc scenario) adapt() string {
	if sc.cfg.Adapt == nil {
		return ""
	}
	a := sc.cfg.Adapt
	return fmt.Sprintf("; adapt latency %v errors %v min %d max %d, a shop of %d serving in %v, %d flooders",
		a.Latency, capacity.FormatShare(a.Errors), a.Min, a.Max, sc.servers, sc.service, sc.flooders)
}
