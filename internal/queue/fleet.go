package queue

import "time"

// FormatLevel is the level of the formats this build reads: the cookie, passes,
// hand-off codes, the store's keys and scripts, the state file. A release that learns
// to read a new format raises it, and writes the new format only once every live
// instance of the room reads it (Store.Fleet says so); until then it writes the old
// one. CONTRIBUTING, "Formats across versions", has the rule.
const FormatLevel = 2

// Fleet is what a store knows of the instances serving one room.
type Fleet struct {
	// Instances counts the live instances: the one asking, and every other that
	// renewed its record within FleetWindows.Record, or, of a release from before
	// the record, its lease (Holder) within FleetWindows.Lease.
	Instances int
	// Reads is the lowest FormatLevel among them. A live instance that recorded none
	// (a release from before the record) reads level 1.
	Reads int
}

// FleetWindows say how recently an instance must have been heard of to be live: by
// its record (a few of its periods), or, for a release from before the record, by
// its lease (queue_ttl, as for the waiters it holds).
type FleetWindows struct {
	Record, Lease time.Duration
}
