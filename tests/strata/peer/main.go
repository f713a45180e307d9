// Command strata-peer reads one Strata file with Strata's own parser (the
// `spec` package of Strata's public repository, built by
// scripts/strata-peer.sh at a pinned commit) and prints what that parser made
// of it as one JSON object on stdout. It is cairn's peer for issue 32: the
// tests hand it files cairn writes, and hand cairn the files Strata's tests
// write, so "reads in Strata" is decided by Strata's code, not by ours.
//
//	strata-peer lockfile FILE
//	strata-peer profile FILE
//	strata-peer layer FILE       a layer manifest (spec.LayerManifest)
//	strata-peer formation FILE   a formation (spec.Formation)
//
// Output fields (absent when they do not apply):
//
//	parse_error     the error of ParseLockFileBytes / ParseProfileBytes, or null
//	                (ParseProfileBytes also runs Profile.Validate)
//	decode_error    the error of decoding the YAML into Strata's type alone, or null
//	                (for a profile, the first step of ParseProfileBytes, before
//	                Validate; for a lockfile, the same as parse_error)
//	strict_error    the error of the same YAML decoded with yaml.v3's KnownFields(true):
//	                Strata itself ignores unknown fields; this names them
//	validate_error  the lockfile's Validate() error, when this version of the spec has one
//	frozen          LockFile.IsFrozen()
//	environment_id  LockFile.EnvironmentID() ("" when not frozen)
//	remarshal       MarshalLockFile / MarshalProfile of what was parsed (yaml.Marshal
//	                for a layer manifest or formation, which Strata's registry
//	                stores as YAML and reads with yaml.Unmarshal)
//	software        the profile's software refs as SoftwareRef.String() gives them
//
// Exit status: 0 when the JSON was printed (whatever it says), 2 on a usage
// or I/O error. This file is cairn's; nothing of Strata's is copied here.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/scttfrdmn/strata/spec"
	"gopkg.in/yaml.v3"
)

type result struct {
	Kind          string   `json:"kind"`
	ParseError    *string  `json:"parse_error"`
	DecodeError   *string  `json:"decode_error"`
	StrictError   *string  `json:"strict_error"`
	ValidateError *string  `json:"validate_error,omitempty"`
	HasValidate   bool     `json:"has_validate"`
	Frozen        *bool    `json:"frozen,omitempty"`
	EnvironmentID *string  `json:"environment_id,omitempty"`
	Remarshal     *string  `json:"remarshal,omitempty"`
	Software      []string `json:"software,omitempty"`
}

func errString(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

// strict decodes data into v the way Strata does, but refusing fields the
// target type does not name.
func strict(data []byte, v interface{}) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(v)
}

func lockfile(data []byte) result {
	r := result{Kind: "lockfile"}
	var probe spec.LockFile
	r.StrictError = errString(strict(data, &probe))
	l, err := spec.ParseLockFileBytes(data)
	r.ParseError = errString(err)
	r.DecodeError = r.ParseError
	if err != nil {
		return r
	}
	// Later versions of the spec give LockFile a Validate method; v0.22.0 has none.
	if v, ok := interface{}(l).(interface{ Validate() error }); ok {
		r.HasValidate = true
		msg := ""
		if e := v.Validate(); e != nil {
			msg = e.Error()
		}
		r.ValidateError = &msg
	}
	frozen := l.IsFrozen()
	id := l.EnvironmentID()
	r.Frozen, r.EnvironmentID = &frozen, &id
	if out, e := spec.MarshalLockFile(l); e == nil {
		s := string(out)
		r.Remarshal = &s
	}
	return r
}

func profile(data []byte) result {
	r := result{Kind: "profile", HasValidate: true}
	var probe spec.Profile
	r.StrictError = errString(strict(data, &probe))
	var decoded spec.Profile
	r.DecodeError = errString(yaml.Unmarshal(data, &decoded))
	p, err := spec.ParseProfileBytes(data)
	r.ParseError = errString(err)
	if err != nil {
		return r
	}
	r.Software = []string{}
	for _, s := range p.Software {
		r.Software = append(r.Software, s.String())
	}
	if out, e := spec.MarshalProfile(p); e == nil {
		s := string(out)
		r.Remarshal = &s
	}
	return r
}

// registryDocument reads a layer manifest or a formation the way Strata's
// registry clients do: yaml.Unmarshal into the spec type, nothing more.
func registryDocument(kind string, data []byte, v interface{}, probe interface{}) result {
	r := result{Kind: kind}
	r.StrictError = errString(strict(data, probe))
	r.ParseError = errString(yaml.Unmarshal(data, v))
	r.DecodeError = r.ParseError
	if r.ParseError == nil {
		if out, e := yaml.Marshal(v); e == nil {
			s := string(out)
			r.Remarshal = &s
		}
	}
	return r
}

func main() {
	kinds := map[string]bool{"lockfile": true, "profile": true, "layer": true, "formation": true}
	if len(os.Args) != 3 || !kinds[os.Args[1]] {
		fmt.Fprintln(os.Stderr, "usage: strata-peer lockfile|profile|layer|formation FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var r result
	switch os.Args[1] {
	case "lockfile":
		r = lockfile(data)
	case "profile":
		r = profile(data)
	case "layer":
		r = registryDocument("layer", data, &spec.LayerManifest{}, &spec.LayerManifest{})
	case "formation":
		r = registryDocument("formation", data, &spec.Formation{}, &spec.Formation{})
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
