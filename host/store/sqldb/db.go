// Package sqldb is the SQL shared by the two store drivers. Queries are written once, with $n
// placeholders, and run through a small connection interface that pgstore implements over a pgx
// pool and sqlitestore over database/sql. Only the drivers import this package.
package sqldb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Rows is a result set.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Close() error
	Err() error
}

// Row is a single-row result.
type Row interface {
	Scan(dest ...any) error
}

// Conn runs statements: a pool, a connection or a transaction.
type Conn interface {
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Tx is a transaction.
type Tx interface {
	Conn
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// Dialect is what differs between the drivers.
type Dialect struct {
	Name string // "postgres" or "sqlite"
	// MapError turns driver errors into store sentinels (no rows: ErrNotFound, unique: ErrConflict).
	MapError func(error) error
	// TimeArg encodes a time argument (time.Time for pgx, fixed-width text for SQLite).
	TimeArg func(time.Time) any
}

// Row-lock clauses for rowLock.
const (
	lockUpdate      = "FOR UPDATE"
	lockNoKeyUpdate = "FOR NO KEY UPDATE" // the lock an UPDATE not touching a key takes: inserts referencing the row go on
	lockSkipLocked  = "FOR UPDATE SKIP LOCKED"
	lockShare       = "FOR SHARE" // writers of the row wait; readers and other sharers do not
)

// rowLock returns the row-lock clause, with a leading space, for a SELECT on PostgreSQL, where
// transactions run READ COMMITTED side by side, and "" on SQLite, which needs none: its
// transactions take the one writer lock at BEGIN (IMMEDIATE), so its writers take turns already.
func (db *DB) rowLock(clause string) string {
	if db.D.Name != "postgres" {
		return ""
	}
	return " " + clause
}

// DB runs the shared queries over one Conn.
type DB struct {
	conn  Conn
	begin func(ctx context.Context) (Tx, error) // nil inside a transaction
	D     *Dialect
	Clock func() time.Time

	lists    *listCache    // nil: no listing cache (see CacheProjectLists)
	txWrites *txWrites     // what a transaction wrote (set inside one)
	timeout  time.Duration // each call's deadline (deadline.go); 0: none
	faults   *faults       // shared by the DB and its transactions
}

// New returns a DB over conn; begin starts transactions (nil for a DB that is one already).
func New(conn Conn, begin func(ctx context.Context) (Tx, error), d *Dialect, clock func() time.Time) *DB {
	if clock == nil {
		clock = time.Now
	}
	return &DB{conn: conn, begin: begin, D: d, Clock: clock, faults: &faults{}}
}

// Conn is the connection or transaction db runs on, for a driver's own extensions (bulk copy).
func (db *DB) Conn() Conn { return db.conn }

// Now is the store's clock, in UTC with microsecond precision (what both databases keep).
func (db *DB) Now() time.Time { return db.Clock().UTC().Truncate(time.Microsecond) }

// InTransaction reports whether db is a transaction.
func (db *DB) InTransaction() bool { return db.begin == nil }

// WithTx runs fn in a transaction; inside one already, fn runs in it.
func (db *DB) WithTx(ctx context.Context, fn func(tx *DB) error) (err error) {
	if db.begin == nil {
		return fn(db)
	}
	if err := latched(ctx); err != nil {
		return err
	}
	tx, err := db.begin(ctx)
	if err != nil {
		return fmt.Errorf("store: begin: %w", db.D.MapError(err))
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx)) // the panic is what matters; a failed rollback ends with the connection
			panic(p)
		}
		if err != nil {
			if rerr := tx.Rollback(context.WithoutCancel(ctx)); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()
	txDB := &DB{conn: tx, D: db.D, Clock: db.Clock, lists: db.lists, txWrites: &txWrites{}, timeout: db.timeout, faults: db.faults}
	defer func() {
		// After the commit (or the rollback, where it costs only a re-read): see listcache.go.
		if txDB.txWrites.projects {
			db.projectsChanged()
		}
	}()
	if err = fn(txDB); err != nil {
		return err
	}
	if err = db.Bounded(ctx, tx.Commit); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	db.wrote()
	return nil
}

// Exec runs a statement and returns the rows it affected.
func (db *DB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	if err := latched(ctx); err != nil {
		return 0, err
	}
	bctx, cancel := db.bound(ctx)
	n, err := db.conn.Exec(bctx, q, args...)
	cancel()
	if err != nil {
		return n, db.fail(ctx, bctx, err)
	}
	if !db.InTransaction() {
		db.wrote() // in a transaction, the commit says whether the write went through
	}
	return n, nil
}

// Query runs a query.
func (db *DB) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	if err := latched(ctx); err != nil {
		return nil, err
	}
	bctx, cancel := db.bound(ctx)
	rows, err := db.conn.Query(bctx, q, args...)
	if err != nil {
		cancel()
		return nil, db.fail(ctx, bctx, err)
	}
	return boundRows{Rows: rows, db: db, ctx: ctx, bctx: bctx, cancel: cancel}, nil
}

// QueryRow runs a single-row query; Scan returns store.ErrNotFound when there is no row.
func (db *DB) QueryRow(ctx context.Context, q string, args ...any) Row {
	if err := latched(ctx); err != nil {
		return errRow{err}
	}
	bctx, cancel := db.bound(ctx)
	return mappedRow{r: db.conn.QueryRow(bctx, q, args...), db: db, ctx: ctx, bctx: bctx, cancel: cancel}
}

// errRow is a row whose query was not run.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// mappedRow maps its Scan's error and ends the call's deadline.
type mappedRow struct {
	r         Row
	db        *DB
	ctx, bctx context.Context
	cancel    context.CancelFunc
}

func (m mappedRow) Scan(dest ...any) error {
	err := m.r.Scan(dest...)
	m.cancel()
	return m.db.fail(m.ctx, m.bctx, err)
}

// T encodes a time argument; the zero time is NULL.
func (db *DB) T(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return db.D.TimeArg(t.UTC())
}

// TP encodes an optional time argument.
func (db *DB) TP(t *time.Time) any {
	if t == nil {
		return nil
	}
	return db.T(*t)
}

// SQLiteTimeFormat is the fixed-width UTC form times are stored in on SQLite, so they sort as text.
const SQLiteTimeFormat = "2006-01-02T15:04:05.000000Z"

// J encodes a JSON argument; empty is NULL.
func J(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// JOr encodes a JSON argument, with def when raw is empty.
func JOr(raw []byte, def string) any {
	if len(raw) == 0 {
		return def
	}
	return string(raw)
}

// JV marshals v as a JSON argument.
func JV(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("store: encode json: %w", err)
	}
	return string(b), nil
}

// Time scans a timestamp column (time.Time from pgx, text from SQLite) into *dst.
func Time(dst *time.Time) any { return timeScanner{dst: dst} }

// NullTime scans a nullable timestamp column into *dst (nil for NULL).
func NullTime(dst **time.Time) any { return nullTimeScanner{dst: dst} }

// JSON scans a JSON column (text or bytes) into *dst (nil for NULL).
func JSON(dst *json.RawMessage) any { return jsonScanner{dst: dst} }

type timeScanner struct{ dst *time.Time }

func (s timeScanner) Scan(v any) error {
	t, _, err := parseTime(v) // t is the zero time for NULL
	if err == nil {
		*s.dst = t
	}
	return err
}

type nullTimeScanner struct{ dst **time.Time }

func (s nullTimeScanner) Scan(v any) error {
	t, ok, err := parseTime(v)
	if err != nil {
		return err
	}
	if ok {
		*s.dst = &t
	} else {
		*s.dst = nil
	}
	return nil
}

func parseTime(v any) (time.Time, bool, error) {
	switch x := v.(type) {
	case nil:
		return time.Time{}, false, nil
	case time.Time:
		return x.UTC(), true, nil
	case string:
		return parseTimeText(x)
	case []byte:
		return parseTimeText(string(x))
	}
	return time.Time{}, false, fmt.Errorf("store: cannot scan %T as a time", v)
}

func parseTimeText(s string) (time.Time, bool, error) {
	if s == "" {
		return time.Time{}, false, nil
	}
	if t, ok := parseFixedTime(s); ok {
		return t, true, nil
	}
	for _, layout := range []string{SQLiteTimeFormat, time.RFC3339Nano, "2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true, nil
		}
	}
	return time.Time{}, false, fmt.Errorf("store: bad time %q", s)
}

type jsonScanner struct{ dst *json.RawMessage }

func (s jsonScanner) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*s.dst = nil
	case string:
		*s.dst = json.RawMessage(x)
	case []byte:
		*s.dst = append(json.RawMessage(nil), x...)
	default:
		b, err := json.Marshal(x) // pgx may hand jsonb over decoded
		if err != nil {
			return fmt.Errorf("store: scan json: %w", err)
		}
		*s.dst = b
	}
	return nil
}

// QueryEach runs q and calls scan on each row of its answer, stopping at the first error.
func QueryEach(ctx context.Context, db *DB, q string, args []any, scan func(Row) error) error {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	return EachRow(rows, scan)
}

// EachRow calls scan on each of rows, stopping at the first error, and closes them.
func EachRow(rows Rows, scan func(Row) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// queryAll runs q and reads each row of its answer with scan; no rows is an empty list, not nil.
func queryAll[T any](ctx context.Context, db *DB, scan func(Row) (*T, error), q string, args ...any) ([]T, error) {
	out := []T{}
	err := QueryEach(ctx, db, q, args, func(r Row) error {
		x, err := scan(r)
		if err != nil {
			return err
		}
		out = append(out, *x)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// queryPage reads one page of a listing and the count of all its rows: cols over from (the FROM and
// WHERE, whose values are in a), in the given order, each row read by scan.
func queryPage[T any](ctx context.Context, db *DB, cols, from, order string, a *Args, limit, offset int,
	scan func(Row) (*T, error)) ([]T, int, error) {
	var total int
	if err := db.QueryRow(ctx, `SELECT COUNT(*)`+from, a.List...).Scan(&total); err != nil {
		return nil, 0, err
	}
	out, err := queryAll(ctx, db, scan, `SELECT `+cols+from+` ORDER BY `+order+` LIMIT `+a.Add(limit)+` OFFSET `+a.Add(offset), a.List...)
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// Args collects positional arguments while a query is built.
type Args struct{ List []any }

// Add appends v and returns its placeholder.
func (a *Args) Add(v any) string {
	a.List = append(a.List, v)
	return fmt.Sprintf("$%d", len(a.List))
}

// Eq appends "col = $n", with v's placeholder, to conds when v is set: an optional filter of a
// listing (an empty v filters nothing).
func (a *Args) Eq(conds []string, col, v string) []string {
	if v == "" {
		return conds
	}
	return append(conds, col+" = "+a.Add(v))
}

// In returns "col IN ($i, ...)" for vals.
func (a *Args) In(col string, vals []string) string {
	ph := make([]string, len(vals))
	for i, v := range vals {
		ph[i] = a.Add(v)
	}
	return col + " IN (" + strings.Join(ph, ", ") + ")"
}

// RebindSQLite turns $n placeholders into SQLite's ?n: every '$' followed by a digit becomes '?'
// (the digits stay). It runs for every SQLite statement, so it is a byte scan, not a regexp
// replacement (which was a tenth of an ingest's instructions); FuzzRebindSQLite holds it to the
// regexp's result.
func RebindSQLite(q string) string {
	i := strings.IndexByte(q, '$')
	if i < 0 {
		return q
	}
	b := []byte(q)
	for ; i+1 < len(b); i++ {
		if b[i] == '$' && b[i+1] >= '0' && b[i+1] <= '9' {
			b[i] = '?'
		}
	}
	return string(b)
}

// parseFixedTime reads the SQLiteTimeFormat form digit by digit. Every timestamp SQLite hands
// back is in this form, and time.Parse's layout interpretation was a tenth of the instructions
// of a projects listing.
func parseFixedTime(s string) (time.Time, bool) {
	if len(s) != len(SQLiteTimeFormat) || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
		s[16] != ':' || s[19] != '.' || s[26] != 'Z' {
		return time.Time{}, false
	}
	num := func(from, to int) (int, bool) {
		n := 0
		for i := from; i < to; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	var f [7]int
	for i, span := range [7][2]int{{0, 4}, {5, 7}, {8, 10}, {11, 13}, {14, 16}, {17, 19}, {20, 26}} {
		v, ok := num(span[0], span[1])
		if !ok {
			return time.Time{}, false
		}
		f[i] = v
	}
	if f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > 31 || f[3] > 23 || f[4] > 59 || f[5] > 59 {
		return time.Time{}, false // let time.Parse say what is wrong
	}
	t := time.Date(f[0], time.Month(f[1]), f[2], f[3], f[4], f[5], f[6]*1000, time.UTC)
	if t.Day() != f[2] { // 31 February and the like: time.Date would roll it over
		return time.Time{}, false
	}
	return t, true
}
