// Package capacity is the adaptive capacity's controller, below the room and with no
// Caddy in it: what the operator asks of the shop (Targets: a p90 time to first byte,
// a share of failures, and the bounds), what one instance measures of the shop
// (Meter), and the control law that turns a control period's reading, fleet-wide,
// into the next capacity and the reason the operator is shown (Steer).
//
// Told "capacity dropped by itself", start here: law.go says when and by how much,
// and why it settles; the room's part across a fleet (reporting each period, one
// instance deciding it, the decision kept with the runtime settings) is
// internal/room/steering.go.
package capacity
