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
//   - settings.go: the immutable Settings a request reads with one atomic load;
//     runtimesettings.go defines each setting the admin API can change, once;
//     overrides.go keeps those changes in the store; floors.go the least each takes.
//   - room.go: the admission loop, the secret, the touch cache; lottery.go an event's
//     draw; views.go what a waiter is told; socket.go the waiting sockets.
//   - admin.go, passes.go, preview.go, history.go: the admin API's operations, with
//     typed results; errors.go the errors the admin API tells apart (a caller's
//     mistake, a visitor it does not hold, the store).
//   - adapt.go: the adaptive capacity as a runtime setting (its PATCH, its apply,
//     how the admin API shows it); steering.go how the fleet reports each period
//     and one instance decides on it; meter.go what the room hands its meter. The
//     targets, the meter and the law are internal/capacity's.
//   - config.go: what a room is started with; timing.go how often things happen;
//     message.go the message to the line; perip.go the per-address counters;
//     inspect.go what the module and tests read of a running room.
package room
