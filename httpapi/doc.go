// Package httpapi is seatlock's HTTP API (docs/api.md, openapi.json): it
// translates requests into calls of a reservation.Service and the domain's
// answers and errors into JSON. It holds no booking logic of its own: the
// Service validates, locks and writes; this package decodes strictly, maps
// every domain error to a status and an error code in one table (errors.go),
// and adds what an HTTP service needs around it: request ids, one log line
// per request, Prometheus metrics, panic recovery, health checks and a small
// live seat map page.
//
// Every route is listed in routes.go; every handler is made by a function
// that takes exactly the dependencies it uses, so reading a route tells you
// what it can touch.
//
//	svc := reservation.NewService(store, reservation.Options{Lockers: lockers})
//	handler := httpapi.NewServer(svc, httpapi.Options{
//		Logger:   logger,
//		Registry: prometheus.NewRegistry(),
//	})
//	srv := &http.Server{Addr: ":8080", Handler: handler}
//
// Errors always have the shape
//
//	{"error":{"code":"seat_taken","message":"seats already booked: C7","seats":["C7"]}}
//
// and no answer ever carries a driver message, SQL or a stack trace: a 4xx
// shows the domain's message, which is written for clients, while 5xx
// answers show a fixed text and the error goes to the log.
package httpapi
