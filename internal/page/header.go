package page

import "net/http"

// Field is one response header field; its name is in canonical form.
type Field struct{ Name, Value string }

// SetHeader sets fields on hdr as Header.Set would (Vary as Header.Add, since the
// site may vary on more), with one allocation for all their values where Set makes
// one per field: a queued visitor gets a dozen fields.
func SetHeader(hdr http.Header, fields ...Field) {
	values := make([]string, len(fields))
	for i, f := range fields {
		values[i] = f.Value
		if old := hdr[f.Name]; f.Name == "Vary" && len(old) > 0 {
			hdr[f.Name] = append(old, f.Value)
			continue
		}
		// Capped, so that whoever appends to one field later copies it instead of
		// writing over its neighbour.
		hdr[f.Name] = values[i : i+1 : i+1]
	}
}
