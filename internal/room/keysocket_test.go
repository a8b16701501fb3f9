package room

import (
	"context"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// A keyed place whose client only ever opens the waiting socket with its key (an
// account of a scalper's, say) has not arrived either, with its key's cookie or with
// none: the socket asks where the key stands and is told, and the slot goes back at
// arrive_ttl to the waiter behind, as an unkeyed place's does (arrive.go). Were the
// socket's request the key's touch, the account would hold its slot for as long as it
// kept reopening the socket, without ever coming to the shop.
func TestKeyedSocketIsNoArrival(t *testing.T) {
	for _, keepsCookie := range []bool{false, true} {
		name := "without a cookie"
		if keepsCookie {
			name = "with the key's cookie"
		}
		t.Run(name, func(t *testing.T) {
			const queueTTL = 10 * time.Second
			arriveTTL := settings.ArriveFloor(queueTTL)
			k := newKeyedRoom(t, 1, func(c *Config) {
				c.SessionTTL, c.QueueTTL, c.AwayTTL, c.ArriveTTL = time.Hour, queueTTL, 10*time.Minute, arriveTTL
			})
			ctx := context.Background()
			holder := k.decide(Visit{Page: true})
			bot := k.decide(Visit{Key: "acct-bot", Page: true})
			waiter := k.decide(Visit{Page: true})
			if holder.Outcome != Admitted || bot.Outcome != Queued || waiter.Outcome != Queued {
				t.Fatalf("holder %v, bot %v, waiter %v; want admitted, queued, queued", holder.Outcome, bot.Outcome, waiter.Outcome)
			}
			botCookie, waiterCookie := string(bot.Cookie()), string(waiter.Cookie())
			k.Revoke(ctx, holder.Visitor)
			k.tick(ctx)
			start := k.clk.Now()
			for k.clk.Now().Sub(start) <= 3*arriveTTL {
				v := Visit{Key: "acct-bot", Socket: true}
				if keepsCookie {
					v.Cookie = botCookie
				}
				d := k.decide(v)
				if d.Outcome == Admitted {
					t.Fatalf("the bot's socket was handed to the shop")
				}
				if c := d.Cookie(); keepsCookie && c != nil {
					botCookie = string(c)
				}
				w := k.decide(Visit{Cookie: waiterCookie})
				if c := w.Cookie(); c != nil {
					waiterCookie = string(c)
				}
				if w.Outcome == Admitted {
					if st := k.stats(t); st.NoShows != 1 {
						t.Fatalf("the waiter let in with %d no-shows, want 1 (the bot's)", st.NoShows)
					}
					return
				}
				k.clk.set(k.clk.Now().Add(time.Second))
				k.tick(ctx)
			}
			st := k.stats(t)
			t.Fatalf("the keyed bot only opened its socket for %v (arrive_ttl %v), yet the waiter is still out: %d no-shows, %d active", 3*arriveTTL, arriveTTL, st.NoShows, st.Active)
		})
	}
}
