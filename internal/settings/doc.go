// Package settings is what a room runs with, below the room and with no Caddy in it:
// the runtime settings, each defined once, and the snapshot a request reads.
//
// What is where:
//   - runtime.go: Runtime, the settings the admin API can change while the room runs,
//     and runtimeSettings, the table that holds each one's name, its check (with its
//     one message, which the Caddyfile, the JSON config's validation and PATCH all
//     give), its PATCH, how its override applies and how it is shown; adapt.go is
//     the adaptive capacity's entry.
//   - overrides.go: the Overrides a PATCH sets, how a PATCH merges into what the
//     store holds, and the rules the merged overrides must keep.
//   - snapshot.go: the immutable Snapshot (configuration, then the event in
//     progress, then the overrides) and what the store and the page read of it.
//   - config.go: the configuration a room's settings follow from, the rate and the
//     events; floors.go the least each setting takes; message.go the message to the
//     line.
//
// Told "my PATCH did not take", or "which setting wins", start here. The room
// (internal/room) keeps the overrides in its store and the snapshot in force.
package settings
