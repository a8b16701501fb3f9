// Package capacity is the adaptive capacity's controller, below the room and with no
// Caddy in it: what the operator asks of the shop (Targets: a p90 time to first byte,
// a share of failures, and the bounds), what one instance measures of the shop
// (Meter), and the control law that turns a control period's reading, fleet-wide,
// into the next capacity and the reason the operator is shown (Steer).
//
// Told "capacity dropped by itself", start here: law.go says when and by how much,
// and why it settles; fleet.go how a fleet reports each control period and one
// instance decides it (the room saves the decision with its runtime settings,
// internal/room/steering.go); override.go how the admin API changes the targets and
// shows the last decision.
package capacity
