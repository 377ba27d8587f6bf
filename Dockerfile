# Builds both binaries of seatlock: the API (default) and the load generator.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/api ./cmd/api && \
    CGO_ENABLED=0 go build -trimpath -o /out/loadgen ./cmd/loadgen

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/api /out/loadgen /usr/local/bin/
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/api"]
