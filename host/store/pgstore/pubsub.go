package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/reelforge/reelforge/host/store"
)

var _ store.PubSub = (*Driver)(nil)

// Publish implements store.PubSub with pg_notify (outside any transaction of d: at once).
func (d *Driver) Publish(ctx context.Context, channel, payload string) error {
	if _, err := d.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload); err != nil {
		return fmt.Errorf("pgstore: notify: %w", err)
	}
	return nil
}

// Listen implements store.PubSub: LISTEN on a connection of its own, outside the pool (a
// listening connection must not serve queries), closed when Listen returns. Not one taken out of
// the pool: on a server with one connection free beside the pool's, that would take the pool's
// last and leave the host no connection to serve with.
func (d *Driver) Listen(ctx context.Context, channel string, fn func(payload string)) error {
	conn, err := pgx.ConnectConfig(ctx, d.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("pgstore: listen: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx)) // closing a connection we are done with
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{channel}.Sanitize()); err != nil {
		return fmt.Errorf("pgstore: listen: %w", err)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("pgstore: wait for notification: %w", err)
		}
		fn(n.Payload)
	}
}
