package token

import (
	"errors"
	"reflect"
	"regexp"
	"strconv"
)

// MySQL's errors after which a transaction must run again (Transact does):
// ER_LOCK_DEADLOCK (1213, SQLSTATE 40001: InnoDB rolled the transaction
// back), ER_LOCK_WAIT_TIMEOUT (1205: the statement waited
// innodb_lock_wait_timeout for a row lock and was rolled back, the
// transaction was not) and ER_CHECKREAD (1020, MariaDB: "record has
// changed since last read", a REPEATABLE READ transaction's locking read of
// a row changed after its snapshot, with innodb_snapshot_isolation on).
var mysqlConflicts = map[uint64]bool{1213: true, 1205: true, 1020: true}

// mysqlErrorText finds a MySQL error number in go-sql-driver's text for its
// errors, "Error 1213 (40001): Deadlock found ..." (older versions: "Error
// 1213: ...").
var mysqlErrorText = regexp.MustCompile(`\bError (\d{4})( \([0-9A-Z]{5}\))?: `)

// isMySQLConflict reports whether err is one of mysqlConflicts. The package
// imports no driver, and go-sql-driver's *mysql.MySQLError has no method
// that says its number, only a field: the number is read from a field
// Number (an unsigned integer) of an error whose type is named MySQLError,
// anywhere in err's chain, or else from the driver's text.
func isMySQLConflict(err error) bool {
	if n, ok := mysqlErrorNumber(err); ok {
		return mysqlConflicts[n]
	}
	if m := mysqlErrorText.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.ParseUint(m[1], 10, 16)
		return mysqlConflicts[n]
	}
	return false
}

// mysqlErrorNumber returns the field Number of the first error in err's
// chain whose type (or the type it points to) is a struct named MySQLError.
func mysqlErrorNumber(err error) (uint64, bool) {
	for err != nil {
		v := reflect.ValueOf(err)
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() == reflect.Struct && v.Type().Name() == "MySQLError" {
			if f := v.FieldByName("Number"); f.IsValid() && f.CanUint() {
				return f.Uint(), true
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if n, ok := mysqlErrorNumber(e); ok {
					return n, true
				}
			}
			return 0, false
		default:
			err = errors.Unwrap(err)
		}
	}
	return 0, false
}
