package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// maxBodyBytes bounds every request body. The largest valid request, a
// screening with a 200-character movie title, is far below it.
const maxBodyBytes = 64 << 10

// decodeJSON reads the request body into v, strictly: the body must be one
// JSON value of v's shape, with no unknown fields, no field named twice or
// in another case, and nothing after it. A typo such as "seat" for "seats"
// is an error rather than a silently empty field. On failure it answers 400 (or 413 for a body over maxBodyBytes,
// 415 for a body not sent as JSON) and returns false.
func decodeJSON(c *gin.Context, v any) bool {
	if !sentAsJSON(c.Request.Header) {
		// A browser sends text/plain, form and multipart bodies to
		// another site without asking it first (no CORS preflight); a
		// JSON API that read them would take writes from any page its
		// users visit.
		respondCode(c, http.StatusUnsupportedMediaType, codeMediaType,
			"request body must be sent with Content-Type: application/json")
		return false
	}
	if c.Request.ContentLength > maxBodyBytes {
		// Refused before reading: a client that announces a huge body and
		// sends it slowly (or never) must not hold the connection until
		// the server's read timeout.
		respondCode(c, http.StatusRequestEntityTooLarge, codeTooLarge,
			fmt.Sprintf("request body is larger than %d bytes", maxBodyBytes))
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		respondCode(c, http.StatusRequestEntityTooLarge, codeTooLarge,
			fmt.Sprintf("request body is larger than %d bytes", maxBodyBytes))
		return false
	case err != nil:
		respondCode(c, http.StatusBadRequest, codeInvalid, "request body could not be read")
		return false
	case !utf8.Valid(body):
		// encoding/json would quietly turn bad bytes into U+FFFD, and a
		// customer name would be stored other than it was sent.
		respondCode(c, http.StatusBadRequest, codeInvalid, "request body is not valid UTF-8")
		return false
	}
	// One strict pass decodes a valid body. Only a refused one is decoded
	// again, by encoding/json, for a message that names the field.
	if err := jsonv2.Unmarshal(body, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		respondCode(c, http.StatusBadRequest, codeInvalid, refusal(body, v, err))
		return false
	}
	return true
}

// sentAsJSON reports whether the request says its body is JSON: a
// Content-Type of application/json, in any case, with parameters (such as
// charset) allowed.
func sentAsJSON(h http.Header) bool {
	mediaType, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mediaType == "application/json"
}

// refusal explains why the strict decoder refused body for a value of v's
// type (strictErr). A field that is not one of v's, or one named twice, is
// named from the strict decoder's own error (see fieldMessage). Any other
// refusal is explained by encoding/json's error when it refuses the body
// too, since it names the field and the type wanted.
func refusal(body []byte, v any, strictErr error) string {
	if msg, ok := fieldMessage(reflect.TypeOf(v).Elem(), strictErr); ok {
		return msg
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(reflect.New(reflect.TypeOf(v).Elem()).Interface())
	if err == nil {
		// Anything but the end of the body after the value is an error.
		var extra json.RawMessage
		if err = dec.Decode(&extra); err == io.EOF {
			// What else only the strict decoder refuses, such as an
			// escaped lone surrogate in a string.
			return "request body is not valid JSON for this request"
		} else if err == nil {
			err = errTrailingData
		}
	}
	return describeJSONError(err)
}

var errTrailingData = errors.New("trailing data")

// fieldMessage names the field of an unknown-name or repeated-name
// refusal of the strict decoder, as a path such as "queue.admit_per_s".
// encoding/json matches names whatever their case and lets a repeated name
// overwrite the first, where the strict decoder matches names exactly and
// refuses repeats, so that "Seats" or two "seats" are refused rather than
// read in a way the client may not have meant. A name that differs from
// one of t's only in case gets that one suggested. ok is false for any
// other error.
func fieldMessage(t reflect.Type, err error) (msg string, ok bool) {
	var semantic *jsonv2.SemanticError
	var syntactic *jsontext.SyntacticError
	switch {
	case errors.Is(err, jsonv2.ErrUnknownName) && errors.As(err, &semantic):
		path := slices.Collect(semantic.JSONPointer.Tokens())
		msg = fmt.Sprintf("request body has field %q, which this request does not take", fieldPath(path))
		if want := caseFold(t, path); want != "" {
			msg += fmt.Sprintf(" (names are case-sensitive: did you mean %q?)", want)
		}
		return msg, true
	case errors.Is(err, jsontext.ErrDuplicateName) && errors.As(err, &syntactic):
		path := slices.Collect(syntactic.JSONPointer.Tokens())
		return fmt.Sprintf("request body names field %q twice", fieldPath(path)), true
	}
	return "", false
}

// fieldPath writes the path of a field for a message, its names joined by
// dots, shortened so that a client's long name is not echoed at length.
func fieldPath(path []string) string {
	return clip(strings.Join(path, "."), 80)
}

// caseFold returns the name, written as t's JSON names are, of the field
// at path (names of nested objects, then the field) when only the last
// name's case differs from one of t's; otherwise "".
func caseFold(t reflect.Type, path []string) string {
	for i, name := range path {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return ""
		}
		var next reflect.Type
		for f := range t.Fields() {
			json, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			last := i == len(path)-1
			switch {
			case last && strings.EqualFold(json, name):
				return strings.Join(append(slices.Clone(path[:i]), json), ".")
			case !last && json == name:
				next = f.Type
			}
		}
		if next == nil {
			return ""
		}
		t = next
	}
	return ""
}

// describeJSONError turns a decoding error into a message for the client
// that names the offending field where there is one. It never echoes the
// client's input at length.
func describeJSONError(err error) string {
	var (
		syntax    *json.SyntaxError
		wrongType *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.EOF):
		return "request body is empty; want a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "request body is truncated JSON"
	case errors.Is(err, errTrailingData):
		return "request body has data after the JSON object"
	case errors.As(err, &syntax):
		return fmt.Sprintf("request body is not valid JSON (at byte %d)", syntax.Offset)
	case errors.As(err, &wrongType):
		if wrongType.Field == "" {
			return fmt.Sprintf("request body must be a JSON object, not %s", wrongType.Value)
		}
		return fmt.Sprintf("field %q must be %s, not %s", wrongType.Field, jsonKind(wrongType.Type.Kind().String()), wrongType.Value)
	default:
		// encoding/json reports unknown fields only as text; its message
		// quotes the field name, which is short and safe to show.
		return "request body: " + clip(strings.TrimPrefix(err.Error(), "json: "), 120)
	}
}

// jsonKind names a Go kind as the JSON a client should send instead.
func jsonKind(kind string) string {
	switch kind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer in range"
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "bool":
		return "true or false"
	default:
		return "an object"
	}
}

// clip shortens s to at most n bytes for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
