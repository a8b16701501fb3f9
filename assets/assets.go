// Package assets holds the files the plugin serves, embedded: the default waiting
// page (an html/template with inline CSS and JS), the admin dashboard, and the
// translations, one JSON file per language. Nothing here is code; internal/page reads
// the page and translations, admin serves the dashboard.
package assets

import "embed"

// Files are the embedded files: waiting.html, challenge.html (the proof-of-work
// page), draw.html (the public draw page), dashboard.html and i18n/<lang>.json.
//
//go:embed waiting.html challenge.html draw.html dashboard.html i18n/*.json
var Files embed.FS
