package httpapi

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestBookingAppendJSONIsEncodingJSON checks that bookingJSON.appendJSON
// writes the bytes encoding/json writes, with every field of the struct
// set (so a field added to bookingJSON but not to appendJSON fails it),
// and with strings that encoding/json escapes.
func TestBookingAppendJSONIsEncodingJSON(t *testing.T) {
	strs := []string{
		"plain", "", `qu"ote`, `back\slash`, "a<b", "c>d", "e&f", "tab\tnew\nline\x01",
		"Zoë", "line\u2028sep", "bad \xff utf-8", "del\x7f", "~ ok!#$%'()*+,-./:;=?@[]^_`{|}",
	}
	created := time.Date(2026, 11, 27, 4, 30, 1, 123456789, time.UTC)
	for i, s := range strs {
		var b bookingJSON
		v := reflect.ValueOf(&b).Elem()
		for f := range v.NumField() {
			switch field := v.Field(f); field.Kind() {
			case reflect.String:
				field.SetString(s + "-" + v.Type().Field(f).Name)
			case reflect.Slice:
				field.Set(reflect.ValueOf([]string{s, strs[(i+1)%len(strs)]}))
			case reflect.Struct:
				field.Set(reflect.ValueOf(created.Add(time.Duration(i) * time.Second)))
			default:
				t.Fatalf("field %s: a kind this test does not set", v.Type().Field(f).Name)
			}
		}
		for _, b := range []bookingJSON{b, {Seats: []string{}}, {}} {
			want, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := b.appendJSON(nil)
			if err != nil || string(got) != string(want) {
				t.Errorf("appendJSON wrote\n%s (%v)\nencoding/json\n%s", got, err, want)
			}
		}
	}
}
