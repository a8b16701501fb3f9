// Package room is a running waiting room, below the Caddy module and free of it: the
// module maps its configuration onto a Config and each request onto a Visit, and the
// room decides.
//
// What is where:
//   - decide.go: Decide, what one request gets (admitted, queued, challenged,
//     rejected, degraded, over a cap) with what the module must apply; proof.go and
//     pass.go are the proof of work's and the passes' parts of it, sessionmax.go the
//     fixed session length's; arrive.go the no-show's (a visitor let in who has to
//     arrive).
//   - key.go: a room with `key`, where the visitor is its key, on every device;
//     login.go the place a visitor took before logging in, which the key takes;
//     handoff.go a place moved to another device by a code.
//   - settings.go: the snapshot of the runtime settings in force, read with one
//     atomic load (what it holds is internal/settings'); overrides.go keeps the
//     admin API's changes in the store.
//   - room.go: the admission loop, the secret, the touch cache; lottery.go an event's
//     draw; views.go what a waiter is told; socket.go the waiting sockets.
//   - admin.go, passes.go, preview.go: the admin API's operations, with typed
//     results; errors.go the errors the admin API tells apart (a caller's mistake, a
//     visitor it does not hold, the store).
//   - steering.go: the room's part in the fleet's adaptive capacity
//     (internal/capacity) and what the room hands its meter; the console's last
//     hour is internal/history's.
//   - config.go: what a room is started with; timing.go how often things happen;
//     perip.go the per-address counters; fleet.go the fleet record; inspect.go what
//     the module and tests read of a running room.
package room
