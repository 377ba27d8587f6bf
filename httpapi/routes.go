package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/seatlock/seatlock/reservation"
)

// addRoutes lists every route of the API, each with the dependencies its
// handler uses.
func addRoutes(r *gin.Engine, svc *reservation.Service, opts Options, m *metrics) {
	r.GET("/", handleIndex())
	r.GET("/healthz", handleHealthz())
	ready := opts.Ready
	if ready == nil {
		ready = svc.Ready
	}
	r.GET("/readyz", handleReadyz(ready, opts.ReadyTimeout))
	r.GET("/metrics", handleMetrics(opts.Registry))
	r.GET("/openapi.json", handleOpenAPI())

	// Writes share one rate; a refused admin request spends none of it.
	writes := limitWrites(opts.WriteRate, opts.WriteBurst)
	v1 := r.Group("/v1")
	v1.GET("/screenings", handleScreeningList(svc))
	v1.POST("/screenings", requireAdmin(opts.AdminToken), screeningsPerClient(opts), writes, handleScreeningCreate(svc))
	v1.GET("/screenings/:id", handleScreeningGet(svc))
	v1.GET("/screenings/:id/seats", handleSeatMap(svc))
	v1.GET("/screenings/:id/events", limitStreams(opts.MaxStreams), handleEvents(svc, opts.Events, opts.Heartbeat, opts.QueuePoll))
	v1.POST("/screenings/:id/bookings", writes, handleBookingCreate(svc, m))
	v1.GET("/bookings/:id", handleBookingGet(svc))
	v1.DELETE("/bookings/:id", writes, handleBookingCancel(svc))
	v1.POST("/screenings/:id/holds", writes, handleHoldCreate(svc, m))
	v1.GET("/holds/:id", handleHoldGet(svc))
	v1.POST("/holds/:id/confirm", writes, handleHoldConfirm(svc, m))
	v1.DELETE("/holds/:id", writes, handleHoldRelease(svc, m))
	v1.POST("/screenings/:id/queue", writes, handleQueueJoin(svc))
	v1.GET("/queue/:id", handleQueueGet(svc))

	r.NoRoute(handleNoRoute())
	r.NoMethod(handleNoMethod())
}
