package token

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// mysqlDescribe describes a guard's table on MySQL in one row: its columns,
// its engine, and the columns of its unique keys, each as JSON from
// information_schema. Parameters: the schema (NULL for the connection's
// database) and the table name, three times.
const mysqlDescribe = `SELECT
 (SELECT JSON_ARRAYAGG(JSON_ARRAY(c.ORDINAL_POSITION, c.COLUMN_NAME, c.COLUMN_TYPE, c.IS_NULLABLE = 'NO',
     COALESCE(c.COLLATION_NAME, ''), COALESCE(c.CHARACTER_SET_NAME, ''), c.COLUMN_KEY = 'PRI'))
   FROM information_schema.COLUMNS c WHERE c.TABLE_SCHEMA = COALESCE(?, DATABASE()) AND c.TABLE_NAME = ?),
 (SELECT t.ENGINE FROM information_schema.TABLES t WHERE t.TABLE_SCHEMA = COALESCE(?, DATABASE()) AND t.TABLE_NAME = ?),
 (SELECT JSON_ARRAYAGG(JSON_ARRAY(s.INDEX_NAME, s.COLUMN_NAME, COALESCE(s.SUB_PART, 0)))
   FROM information_schema.STATISTICS s WHERE s.TABLE_SCHEMA = COALESCE(?, DATABASE()) AND s.TABLE_NAME = ? AND s.NON_UNIQUE = 0)`

// describeMySQL reads the table's columns from information_schema; what
// only MySQL can get wrong (the resource's collation, the engine, other
// unique keys, a key on a prefix) comes back as problems.
func (g *Guard) describeMySQL(ctx context.Context, tx Tx) ([]column, []string, error) {
	var schema any
	if g.schema != "" {
		schema = g.schema
	}
	var colsJSON, engine, keysJSON sql.NullString
	if err := tx.QueryRowContext(ctx, mysqlDescribe, schema, g.name, schema, g.name, schema, g.name).
		Scan(&colsJSON, &engine, &keysJSON); err != nil {
		return nil, nil, err
	}
	var raw [][]any
	if colsJSON.Valid {
		if err := json.Unmarshal([]byte(colsJSON.String), &raw); err != nil {
			return nil, nil, fmt.Errorf("reading information_schema.COLUMNS: %w", err)
		}
	}
	sort.Slice(raw, func(i, j int) bool { return jsonNumber(raw[i][0]) < jsonNumber(raw[j][0]) })
	var (
		cols     []column
		problems []string
		charset  = map[string]string{}
	)
	for _, r := range raw {
		if len(r) != 7 {
			return nil, nil, fmt.Errorf("reading information_schema.COLUMNS: unexpected row %v", r)
		}
		var c column
		c.Name, _ = r[1].(string)
		c.Type, _ = r[2].(string)
		c.NotNull = jsonNumber(r[3]) != 0
		c.Collation, _ = r[4].(string)
		charset[c.Name], _ = r[5].(string)
		c.PK = jsonNumber(r[6]) != 0
		cols = append(cols, c)
	}
	if engine.Valid && !strings.EqualFold(engine.String, "InnoDB") {
		problems = append(problems, fmt.Sprintf("the table's engine is %s, want InnoDB (a fence outside the "+
			"transaction: a rolled-back admission stays, and the row is not locked until the commit)", engine.String))
	}
	var keys [][]any
	if keysJSON.Valid {
		if err := json.Unmarshal([]byte(keysJSON.String), &keys); err != nil {
			return nil, nil, fmt.Errorf("reading information_schema.STATISTICS: %w", err)
		}
	}
	others := map[string]bool{}
	for _, k := range keys {
		if len(k) != 3 {
			return nil, nil, fmt.Errorf("reading information_schema.STATISTICS: unexpected row %v", k)
		}
		index, _ := k[0].(string)
		col, _ := k[1].(string)
		switch {
		case index != "PRIMARY":
			others[index] = true
		case jsonNumber(k[2]) != 0:
			problems = append(problems, fmt.Sprintf("the primary key holds the first %d characters of %s only, "+
				"which makes names that share them one resource; want the whole column", int(jsonNumber(k[2])), col))
		}
	}
	for _, index := range sortedKeys(others) {
		problems = append(problems, fmt.Sprintf("unique key %s besides the primary key, want none "+
			"(ON DUPLICATE KEY UPDATE then updates the row that clashes on it)", index))
	}
	for _, c := range cols {
		if c.Name != "resource" || !strings.HasPrefix(c.Type, "varchar(") {
			continue
		}
		if p, err := mysqlCollationProblem(ctx, tx, c.Collation, charset[c.Name]); err != nil {
			return nil, nil, err
		} else if p != "" {
			problems = append(problems, p)
		}
	}
	return cols, problems, nil
}

// mysqlCollationProblem says what is wrong with a VARCHAR resource column of
// collation coll in charset cs, or "" if it compares byte for byte: a
// binary collation (its name ends in _bin), and one that does not pad, which
// the server is asked ("a" = "a " is false).
func mysqlCollationProblem(ctx context.Context, tx Tx, coll, cs string) (string, error) {
	if !isIdentifier(coll) || !isIdentifier(cs) {
		return fmt.Sprintf("column resource has the collation %q, want a binary one", coll), nil
	}
	if !strings.HasSuffix(coll, "_bin") {
		return fmt.Sprintf("column resource has the collation %s, which makes different names equal "+
			"(case or accents); want VARBINARY or a binary collation that does not pad (utf8mb4_0900_bin, utf8mb4_nopad_bin)", coll), nil
	}
	var pads bool
	q := "SELECT CONVERT('a' USING " + cs + ") COLLATE " + coll + " = CONVERT('a ' USING " + cs + ") COLLATE " + coll
	if err := tx.QueryRowContext(ctx, q).Scan(&pads); err != nil {
		return "", err
	}
	if pads {
		return fmt.Sprintf("column resource has the collation %s, which pads with spaces: \"r\" and \"r \" are one "+
			"resource; want VARBINARY or a binary collation that does not pad (utf8mb4_0900_bin, utf8mb4_nopad_bin)", coll), nil
	}
	return "", nil
}

// jsonNumber reads a number or a boolean that JSON_ARRAY made: MySQL 8
// writes a comparison as 1 or 0, MariaDB as true or false.
func jsonNumber(v any) float64 {
	switch v := v.(type) {
	case float64:
		return v
	case bool:
		if v {
			return 1
		}
	}
	return 0
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
