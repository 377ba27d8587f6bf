package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/helpers"

	"github.com/seatlock/seatlock/httpapi"
)

// openAPIValidator checks answers against the OpenAPI document that the
// API serves. It is built once per test binary: building it parses and
// compiles every schema.
var openAPIValidator = sync.OnceValues(func() (validator.Validator, error) {
	return newOpenAPIValidator(httpapi.OpenAPI())
})

func newOpenAPIValidator(spec []byte) (validator.Validator, error) {
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("building the validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("the document is not valid OpenAPI: %s", describe(verrs))
	}
	return v, nil
}

// checkOpenAPI fails the test if an answer differs from what the OpenAPI
// document says of its route and status. Every answer that call receives
// goes through it, so the whole end-to-end suite checks the document.
// Only answers to paths or methods the API does not have (404 no such
// route, 405) lie outside the document; wantError checks their JSON
// wherever a test expects them.
func checkOpenAPI(t testing.TB, req *http.Request, r response) {
	t.Helper()
	if err := openAPIMismatch(req, r); err != nil {
		t.Errorf("%s %s answered %d, which the OpenAPI document does not allow: %v\n%s", req.Method, req.URL.Path, r.status, err, clipBody(r.body))
	}
}

func openAPIMismatch(req *http.Request, r response) error {
	v, err := openAPIValidator()
	if err != nil {
		return err
	}
	res := &http.Response{
		StatusCode: r.status,
		Header:     r.header,
		Body:       io.NopCloser(bytes.NewReader(r.body)),
		Request:    req,
	}
	ok, errs := v.ValidateHttpResponse(req, res)
	if ok {
		return nil
	}
	outside := len(errs) > 0
	for _, e := range errs {
		outside = outside && e.ValidationType == helpers.PathValidation
	}
	if outside && (r.status == http.StatusNotFound || r.status == http.StatusMethodNotAllowed) {
		return nil
	}
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("\n  " + e.Error())
		for _, se := range e.SchemaValidationErrors {
			b.WriteString("\n    " + se.Reason + " at " + se.FieldPath)
		}
	}
	return fmt.Errorf("%s", b.String())
}

func describe[E error](errs []E) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("\n  " + e.Error())
	}
	return b.String()
}

func clipBody(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}

// TestOpenAPI checks that GET /openapi.json answers the document, that the
// document is valid OpenAPI 3.1, and that the check of answers catches
// drift: answers that differ from the document by a field, a type, a
// status or an error code are refused.
func TestOpenAPI(t *testing.T) {
	api := startAPI(t, nil)
	r := call(t, "GET", api.url+"/openapi.json", "")
	if r.status != 200 || !bytes.Equal(r.body, httpapi.OpenAPI()) {
		t.Fatalf("GET /openapi.json: %d, %d bytes", r.status, len(r.body))
	}
	if !bytes.Contains(r.body, []byte(`"openapi": "3.1.0"`)) {
		t.Errorf("not OpenAPI 3.1")
	}

	target := api.url + "/v1/screenings/demo"
	good := call(t, "GET", target, "")
	req, err := http.NewRequest("GET", target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := openAPIMismatch(req, good); err != nil {
		t.Fatalf("a real answer is refused: %v", err)
	}
	json := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	for name, drifted := range map[string]response{
		"extra field":           {200, json, bytes.Replace(good.body, []byte(`"rows"`), []byte(`"extra":1,"rows"`), 1)},
		"renamed field":         {200, json, bytes.Replace(good.body, []byte(`"movie"`), []byte(`"film"`), 1)},
		"wrong type":            {200, json, bytes.Replace(good.body, []byte(`"rows":10`), []byte(`"rows":"10"`), 1)},
		"undocumented status":   {418, json, []byte(`{"error":{"code":"not_found","message":"x"}}`)},
		"unknown error code":    {404, json, []byte(`{"error":{"code":"missing","message":"x"}}`)},
		"error without message": {404, json, []byte(`{"error":{"code":"not_found"}}`)},
	} {
		if err := openAPIMismatch(req, drifted); err == nil {
			t.Errorf("%s: a drifted answer passes: %s", name, drifted.body)
		}
	}
}
