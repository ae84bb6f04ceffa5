package token

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// column is one column of a table as the database describes it.
type column struct {
	Name    string
	Type    string // declared type (SQLite) or format_type (PostgreSQL)
	NotNull bool
	PK      bool // part of the primary key
	// Collation is the column's collation: SQLite's primary key index
	// collation, PostgreSQL's column collation ("" for the default).
	Collation     string
	Deterministic bool // PostgreSQL: the collation compares bytes
}

// The queries that describe a guard's table in one row: the columns as a JSON
// array and, for SQLite, the collations of the primary key index. (One row,
// so that a Tx needs only QueryRowContext.)
const (
	// Parameters: table name, schema name.
	sqliteDescribe = `SELECT
 (SELECT json_group_array(json_array(name, type, "notnull", pk)) FROM pragma_table_info(?1, ?2)),
 (SELECT json_group_array(x.coll) FROM pragma_index_list(?1, ?2) AS il, pragma_index_xinfo(il.name, ?2) AS x
   WHERE il.origin = 'pk' AND x.key = 1)`
	// Parameter: the quoted, possibly qualified, table name.
	postgresDescribe = `SELECT
 coalesce((SELECT json_agg(json_build_array(a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull,
     coalesce(co.collname::text, ''), coalesce(co.collisdeterministic, true),
     EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary AND a.attnum = ANY (i.indkey)))
     ORDER BY a.attnum)
   FROM pg_attribute a LEFT JOIN pg_collation co ON co.oid = a.attcollation
   WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped)::text, '[]')`
)

// checkTable describes the guard's table and refuses a layout other than the
// one CreateTableSQL makes.
func (g *Guard) checkTable(ctx context.Context, tx Tx) error {
	var (
		cols     []column
		problems []string
		err      error
	)
	switch g.dialect {
	case SQLite:
		cols, problems, err = g.describeSQLite(ctx, tx)
	case MySQL:
		cols, problems, err = g.describeMySQL(ctx, tx)
	default:
		cols, problems, err = g.describePostgres(ctx, tx)
	}
	if err != nil {
		return wrapDB("check table "+g.table, err)
	}
	problems = append(problems, g.compare(cols)...)
	if len(problems) > 0 {
		return invalid("table %s has another layout than a fences table, refusing to use it: %s (want %s)",
			g.table, strings.Join(problems, "; "), g.createSQL)
	}
	return nil
}

// describeSQLite reads the table's columns; SQLite-only problems (a
// collation that is not BINARY) come back as problems.
func (g *Guard) describeSQLite(ctx context.Context, tx Tx) ([]column, []string, error) {
	schema := g.schema
	if schema == "" {
		schema = "main"
	}
	var colsJSON, collsJSON string
	if err := tx.QueryRowContext(ctx, sqliteDescribe, g.name, schema).Scan(&colsJSON, &collsJSON); err != nil {
		return nil, nil, err
	}
	var raw [][]any
	if err := json.Unmarshal([]byte(colsJSON), &raw); err != nil {
		return nil, nil, fmt.Errorf("reading table_info: %w", err)
	}
	var cols []column
	for _, r := range raw {
		if len(r) != 4 {
			return nil, nil, fmt.Errorf("reading table_info: unexpected row %v", r)
		}
		name, _ := r[0].(string)
		typ, _ := r[1].(string)
		notNull, _ := r[2].(float64)
		pk, _ := r[3].(float64)
		cols = append(cols, column{Name: name, Type: typ, NotNull: notNull != 0, PK: pk != 0})
	}
	var problems []string
	var colls []string
	if err := json.Unmarshal([]byte(collsJSON), &colls); err != nil {
		return nil, nil, fmt.Errorf("reading index_xinfo: %w", err)
	}
	for _, c := range colls {
		if !strings.EqualFold(c, "BINARY") {
			problems = append(problems, fmt.Sprintf("the primary key compares with collation %s, want BINARY", c))
		}
	}
	// SQLite reports a column's own collation nowhere but in the CREATE
	// statement: any COLLATE there other than BINARY is refused.
	var create string
	q := `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?`
	if g.schema != "" {
		q = `SELECT sql FROM "` + g.schema + `".sqlite_schema WHERE type = 'table' AND name = ?`
	}
	if err := tx.QueryRowContext(ctx, q, g.name).Scan(&create); err != nil {
		return nil, nil, err
	}
	for _, m := range collateRE.FindAllStringSubmatch(create, -1) {
		if name := strings.Trim(m[1], "\"`[]'"); !strings.EqualFold(name, "BINARY") {
			problems = append(problems, fmt.Sprintf("it declares COLLATE %s, want none (BINARY)", name))
		}
	}
	return cols, problems, nil
}

// collateRE finds COLLATE clauses in a CREATE TABLE statement.
var collateRE = regexp.MustCompile(`(?i)\bCOLLATE\s+("[^"]*"|` + "`[^`]*`" + `|\[[^\]]*\]|'[^']*'|\w+)`)

// describePostgres reads the table's columns from the catalog.
func (g *Guard) describePostgres(ctx context.Context, tx Tx) ([]column, []string, error) {
	var colsJSON string
	if err := tx.QueryRowContext(ctx, postgresDescribe, g.table).Scan(&colsJSON); err != nil {
		return nil, nil, err
	}
	var raw [][]any
	if err := json.Unmarshal([]byte(colsJSON), &raw); err != nil {
		return nil, nil, fmt.Errorf("reading pg_attribute: %w", err)
	}
	var cols []column
	for _, r := range raw {
		if len(r) != 6 {
			return nil, nil, fmt.Errorf("reading pg_attribute: unexpected row %v", r)
		}
		var c column
		c.Name, _ = r[0].(string)
		c.Type, _ = r[1].(string)
		c.NotNull, _ = r[2].(bool)
		c.Collation, _ = r[3].(string)
		c.Deterministic, _ = r[4].(bool)
		c.PK, _ = r[5].(bool)
		cols = append(cols, c)
	}
	var problems []string
	for _, c := range cols {
		if c.Name == "resource" && !c.Deterministic {
			problems = append(problems, fmt.Sprintf("column resource has the nondeterministic collation %q, "+
				"which makes different strings equal; want a deterministic one (the default)", c.Collation))
		}
	}
	return cols, problems, nil
}

// compare lists how cols differ from the guard's layout.
func (g *Guard) compare(cols []column) []string {
	var problems []string
	byName := map[string]column{}
	var names []string
	for _, c := range cols {
		byName[c.Name] = c
		names = append(names, c.Name)
	}
	if len(cols) != 2 || byName["resource"].Name == "" || byName["token"].Name == "" {
		problems = append(problems, fmt.Sprintf("columns (%s), want (resource, token)", strings.Join(names, ", ")))
	}
	if c, ok := byName["resource"]; ok {
		if !g.textType(c.Type) {
			want := "TEXT"
			if g.dialect == MySQL {
				want = "VARBINARY or VARCHAR"
			}
			problems = append(problems, fmt.Sprintf("column resource is %s, want %s", typeName(c.Type), want))
		}
		if !c.PK {
			problems = append(problems, "column resource is not the primary key")
		}
	}
	if c, ok := byName["token"]; ok {
		if !g.tokenType(c.Type) {
			want := "INTEGER"
			switch g.dialect {
			case PostgreSQL:
				want = "bigint"
			case MySQL:
				want = "BIGINT"
			}
			problems = append(problems, fmt.Sprintf("column token is %s, want %s", typeName(c.Type), want))
		}
		if !c.NotNull {
			problems = append(problems, "column token may be NULL, want NOT NULL")
		}
		if c.PK {
			problems = append(problems, "column token is part of the primary key, want the key to be resource alone")
		}
	}
	for _, c := range cols {
		if c.PK && c.Name != "resource" && c.Name != "token" {
			problems = append(problems, fmt.Sprintf("column %s is part of the primary key, want the key to be resource alone", c.Name))
		}
	}
	return problems
}

// typeName shows a declared type; SQLite allows none.
func typeName(t string) string {
	if t == "" {
		return "without a type"
	}
	return t
}

// textType reports whether a resource column of type t stores and compares
// the names it is given unchanged: SQLite's TEXT affinity (an INTEGER or
// NUMERIC column would turn "007" into 7, and "7" with it); PostgreSQL's text
// or varchar; MySQL's varbinary or varchar.
func (g *Guard) textType(t string) bool {
	switch g.dialect {
	case PostgreSQL:
		return t == "text" || t == "character varying"
	case MySQL:
		// The collation of a VARCHAR is describeMySQL's to judge. CHAR and
		// BINARY pad, TEXT and BLOB need a prefix to be a key.
		return strings.HasPrefix(t, "varbinary(") || strings.HasPrefix(t, "varchar(")
	}
	return sqliteAffinity(t) == "TEXT"
}

// tokenType reports whether a token column of type t compares numbers as
// numbers, up to Max: SQLite's INTEGER affinity; PostgreSQL's and MySQL's bigint.
func (g *Guard) tokenType(t string) bool {
	switch g.dialect {
	case PostgreSQL:
		return t == "bigint"
	case MySQL:
		// MySQL 8 says "bigint", MariaDB "bigint(20)"; either may be unsigned.
		t = strings.TrimSuffix(t, " unsigned")
		return t == "bigint" || strings.HasPrefix(t, "bigint(")
	}
	return sqliteAffinity(t) == "INTEGER"
}

// sqliteAffinity is the type affinity SQLite gives a column declared with
// type t (https://www.sqlite.org/datatype3.html#determination_of_column_affinity).
func sqliteAffinity(t string) string {
	u := strings.ToUpper(t)
	switch {
	case strings.Contains(u, "INT"):
		return "INTEGER"
	case strings.Contains(u, "CHAR"), strings.Contains(u, "CLOB"), strings.Contains(u, "TEXT"):
		return "TEXT"
	case u == "", strings.Contains(u, "BLOB"):
		return "BLOB"
	case strings.Contains(u, "REAL"), strings.Contains(u, "FLOA"), strings.Contains(u, "DOUB"):
		return "REAL"
	}
	return "NUMERIC"
}
