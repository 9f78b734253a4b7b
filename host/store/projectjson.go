package store

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends p as encoding/json would write it (same keys, order and escaping; a fuzz
// test holds the two to byte equality). The projects listing writes its pages with it: through
// reflection, encoding a page of 20 projects was the largest cost left in GET /api/projects.
func (p *Project) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, p.ID)
	b = append(b, `,"user_id":`...)
	b = appendJSONString(b, p.UserID)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, p.Name)
	b = append(b, `,"description":`...)
	b = appendJSONString(b, p.Description)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, p.Status)
	b = append(b, `,"workflow_preset_id":`...)
	b = appendJSONString(b, p.WorkflowPresetID)
	b = append(b, `,"blueprint":`...)
	if len(p.Blueprint) == 0 {
		b = append(b, "null"...)
	} else {
		// encoding/json compacts a RawMessage and escapes HTML in it.
		var compact bytes.Buffer
		if err := json.Compact(&compact, p.Blueprint); err != nil {
			return nil, err
		}
		out := bytes.NewBuffer(b)
		json.HTMLEscape(out, compact.Bytes())
		b = out.Bytes()
	}
	b = append(b, `,"created_at":`...)
	b = appendJSONTime(b, p.CreatedAt)
	b = append(b, `,"updated_at":`...)
	b = appendJSONTime(b, p.UpdatedAt)
	b = append(b, `,"is_deleted":`...)
	b = strconv.AppendBool(b, p.IsDeleted)
	return append(b, '}'), nil
}

// appendJSONTime writes t as time.Time's MarshalJSON does (RFC 3339 with trimmed nanoseconds).
// The store's times are UTC, written here digit by digit; any other zone goes through
// AppendFormat.
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	year, month, day := t.Date()
	if t.Location() != time.UTC || year < 0 || year > 9999 {
		b = t.AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	}
	hour, minute, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	if ns := t.Nanosecond(); ns != 0 {
		width := 9
		for ns%10 == 0 {
			ns /= 10
			width--
		}
		b = append(b, '.')
		b = appendDigits(b, ns, width)
	}
	return append(b, 'Z', '"')
}

// appendDigits writes n (not negative) in exactly width digits, zero-padded.
func appendDigits(b []byte, n, width int) []byte {
	for i := width - 1; i >= 0; i-- {
		b = append(b, 0)
	}
	for i := len(b) - 1; i >= len(b)-width; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}

// jsonPlain marks the bytes a JSON string holds as they are (printable ASCII other than the
// quote, the backslash and the HTML characters encoding/json escapes).
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s the way encoding/json does: HTML-safe (<, >, & escaped), U+2028 and
// U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if jsonPlain[s[i]] {
			i++
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
