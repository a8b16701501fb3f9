package waitingroom

import "net/http"

// headerField is one response header field; its name is in canonical form.
type headerField struct{ name, value string }

// setHeader sets fields on hdr as Header.Set would (Vary as Header.Add, since the
// site may vary on more), with one allocation for all their values where Set makes
// one per field: a queued visitor gets a dozen fields.
func setHeader(hdr http.Header, fields ...headerField) {
	values := make([]string, len(fields))
	for i, f := range fields {
		values[i] = f.value
		if old := hdr[f.name]; f.name == "Vary" && len(old) > 0 {
			hdr[f.name] = append(old, f.value)
			continue
		}
		// Capped, so that whoever appends to one field later copies it instead of
		// writing over its neighbour.
		hdr[f.name] = values[i : i+1 : i+1]
	}
}
