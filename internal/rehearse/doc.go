// Package rehearse plays a sale against the real room before the sale: the same
// decision (room.Room.Decide), admission step (Tick), estimator and memory store
// that Caddy runs, on a simulated clock, much faster than real time. It is what
// `caddy waiting-room rehearse` runs, below the module and free of Caddy.
package rehearse
