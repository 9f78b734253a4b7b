package render

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Voice is an espeak-ng voice: its id (the language code espeak-ng takes with -v), its name, the
// languages it speaks (its own first, then those espeak-ng also answers with it) and its gender.
type Voice struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Languages []string `json:"languages"`
	Gender    string   `json:"gender,omitempty"`
}

// Voices are the voices the speech generator has, and the variants (voice qualities, espeak-ng's
// "<voice>+<variant>") any of them takes.
type Voices struct {
	Voices   []Voice `json:"voices"`
	Variants []Voice `json:"variants"`
}

// Known reports whether name is a voice espeak-ng speaks with: a voice's id, name or one of its
// languages, optionally followed by "+<variant>", compared without case.
func (v *Voices) Known(name string) bool {
	base, variant, hasVariant := strings.Cut(strings.TrimSpace(name), "+")
	if hasVariant && !slices.ContainsFunc(v.Variants, func(x Voice) bool { return x.matches(variant) }) {
		return false
	}
	return slices.ContainsFunc(v.Voices, func(x Voice) bool { return x.matches(base) })
}

func (x Voice) matches(name string) bool {
	return strings.EqualFold(x.ID, name) || strings.EqualFold(x.Name, name) ||
		slices.ContainsFunc(x.Languages, func(l string) bool { return strings.EqualFold(l, name) })
}

// ForLanguage returns the voices that speak language (a code such as en or zh; all for "").
func (v *Voices) ForLanguage(language string) []Voice {
	out := []Voice{}
	for _, x := range v.Voices {
		if language == "" || slices.ContainsFunc(x.Languages, func(l string) bool {
			return strings.EqualFold(l, language) || strings.HasPrefix(strings.ToLower(l), strings.ToLower(language)+"-")
		}) {
			out = append(out, x)
		}
	}
	return out
}

// ErrNoSpeech says espeak-ng is not installed: there are no voices to speak with.
var ErrNoSpeech = errors.New("espeak-ng is not on PATH: no voices")

// installed is espeak-ng's voice list, read once: it changes only with the package.
var installed = sync.OnceValues(func() (*Voices, error) {
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		return nil, ErrNoSpeech
	}
	var t Tools
	ctx := context.Background()
	voices, err := t.output(ctx, "espeak-ng", "--voices")
	if err != nil {
		return nil, err
	}
	variants, err := t.output(ctx, "espeak-ng", "--voices=variant")
	if err != nil {
		return nil, err
	}
	v := &Voices{Voices: parseVoices(voices), Variants: parseVoices(variants)}
	for i := range v.Variants {
		v.Variants[i].ID = strings.TrimPrefix(v.Variants[i].ID, "!v/")
		v.Variants[i].Languages = nil
	}
	if len(v.Voices) == 0 {
		return nil, fmt.Errorf("espeak-ng --voices listed no voice")
	}
	return v, nil
})

// InstalledVoices returns espeak-ng's voices on this machine (ErrNoSpeech without espeak-ng).
func InstalledVoices() (*Voices, error) { return installed() }

func (t Tools) output(ctx context.Context, program string, args ...string) (string, error) {
	out, _, err := t.run(ctx, program, args...)
	return out, err
}

// otherLanguage is one entry of the last column of espeak-ng --voices: "(en-us 3)".
var otherLanguage = regexp.MustCompile(`\(([^\s()]+) \d+\)`)

// parseVoices reads the table of espeak-ng --voices: "Pty Language Age/Gender VoiceName File
// Other Languages", other languages as "(en 10)(en-us 3)". A variant's id is its file (!v/name).
func parseVoices(table string) []Voice {
	var out []Voice
	for i, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 5 {
			continue
		}
		v := Voice{ID: f[1], Name: f[3], Languages: []string{f[1]}}
		if _, g, ok := strings.Cut(f[2], "/"); ok && g != "" && g != "-" {
			v.Gender = map[string]string{"M": "male", "F": "female"}[g]
		}
		if f[1] == "variant" {
			v.ID = f[4]
		}
		for _, m := range otherLanguage.FindAllStringSubmatch(strings.Join(f[5:], " "), -1) {
			if !slices.Contains(v.Languages, m[1]) {
				v.Languages = append(v.Languages, m[1])
			}
		}
		out = append(out, v)
	}
	return out
}
