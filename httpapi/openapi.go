package httpapi

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// openAPI is the OpenAPI 3.1 document of the whole API. It is written by
// hand, as the contract rather than a reflection of the code, and the
// end-to-end tests of cmd/api check every answer they get against it, so
// that the two cannot drift apart unnoticed. docs/api.md explains it.
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the API, as served at
// GET /openapi.json.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }

// handleOpenAPI answers the OpenAPI document.
func handleOpenAPI() gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Data(http.StatusOK, "application/json", openAPI)
	}
}
