package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
)

// FuzzStrictDecoderAcceptsLess checks what decodeJSON rests on: a body
// that the strict decoder accepts, encoding/json (which explains every
// refusal, see refusal) accepts too, with the same value. decodeJSON then
// needs one pass for a valid body. Run it bounded:
//
//	go test -run '^$' -fuzz '^FuzzStrictDecoderAcceptsLess$' -fuzztime 15s ./httpapi
func FuzzStrictDecoderAcceptsLess(f *testing.F) {
	for _, seed := range []string{
		`{"seats":["C7","C8"],"customer":"alice"}`,
		`{"count":4,"adjacent":true,"customer":"alice"}`,
		`{"x":1}`, `{"count":1e0,"customer":"a"}`, `{"count":1.0}`, `{"count":-0}`, `{"count":"1"}`,
		`{"count":99999999999999999999}`, `{"seats":null}`, `null`, `{}`, ` {} `, `{} {}`,
		`{"Seats":["A1"]}`, `{"seats":[],"seats":["A1"]}`, `{"customer":"\ud800"}`,
		`{"customer":"\u00e9"}`, `{"adjacent":1}`, `{"adjacent":null}`, `[]`, `""`,
		`{"movie":"m","rows":1,"seats_per_row":1,"payment_delay_ms":null,"hold_ttl_ms":5}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, v := range []any{&createBookingJSON{}, &createScreeningJSON{}} {
			if jsonv2.Unmarshal(body, v, jsonv2.RejectUnknownMembers(true)) != nil {
				continue
			}
			loose := reflect.New(reflect.TypeOf(v).Elem()).Interface()
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(loose); err != nil {
				t.Fatalf("%T: the strict decoder accepts %q, encoding/json refuses it: %v", v, body, err)
			}
			if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
				t.Fatalf("%T: the strict decoder accepts %q, encoding/json finds data after the value", v, body)
			}
			if !reflect.DeepEqual(v, loose) {
				t.Fatalf("%T: %q decodes to %+v strictly, to %+v by encoding/json", v, body, v, loose)
			}
		}
	})
}
