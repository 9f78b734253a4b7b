package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/sdk/errcode"
)

// ok answers {success: true, data: {...}} and repeats the data's keys at the top level, as
// DECISIONS.md asks for named shapes ({token, user}, {project}, ...).
func ok(c *fiber.Ctx, status int, data fiber.Map) error {
	body := fiber.Map{"success": true, "data": data}
	for k, v := range data {
		if k != "success" && k != "data" {
			body[k] = v
		}
	}
	return c.Status(status).JSON(body)
}

// okTop answers success plus fields at the top level (workflow routes).
func okTop(c *fiber.Ctx, status int, fields fiber.Map) error {
	body := fiber.Map{"success": true}
	for k, v := range fields {
		body[k] = v
	}
	return c.Status(status).JSON(body)
}

// listing answers {success, data: [items], total, page, limit}.
func listing(c *fiber.Ctx, items any, total, page, limit int) error {
	return c.JSON(fiber.Map{"success": true, "data": items, "total": total, "page": page, "limit": limit})
}

// maxPage bounds page so that its offset (at most maxPage*100 rows) fits every driver's integers:
// SQLite wrapped 2^63-1 round to the first page, PostgreSQL answered 500.
const maxPage = 1_000_000

// paging reads page (1 to maxPage) and limit (1 to 100, default 20) from the query.
func paging(c *fiber.Ctx) (page, limit, offset int, err error) {
	page, limit = 1, 20
	if v := c.Query("page"); v != "" {
		if page, err = strconv.Atoi(v); err != nil || page < 1 || page > maxPage {
			return 0, 0, 0, errcode.Invalid("page", fmt.Sprintf("must be a whole number from 1 to %d", maxPage))
		}
	}
	if v := c.Query("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 100 {
			return 0, 0, 0, errcode.Invalid("limit", "must be a whole number from 1 to 100")
		}
	}
	return page, limit, (page - 1) * limit, nil
}

// decode reads a JSON body into v. An empty body reads as {}; malformed JSON or a field of the
// wrong type is a 400 VALIDATION_ERROR naming the field.
func decode(c *fiber.Ctx, v any) error {
	body := bytes.TrimSpace(c.Body())
	if len(body) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, "Malformed JSON body")
	}
	// Anything after the value but white space (`{"a":1}}x`) is a malformed body, not ignored.
	if rest := bytes.TrimSpace(body[dec.InputOffset():]); len(rest) > 0 {
		return errcode.New(errcode.Validation, "Malformed JSON body: data after the JSON value")
	}
	return nil
}

// decodeError is the 400 of a JSON value that did not decode (err from encoding/json): a field of
// the wrong type names the field; anything else gives malformed, the message for that value.
func decodeError(err error, malformed string) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return errcode.Invalid(te.Field, "must be of type "+jsonType(te.Type.Kind().String()))
	}
	return errcode.New(errcode.Validation, malformed)
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "map", "struct":
		return "object"
	case "slice", "array":
		return "array"
	case "bool":
		return "boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer" // 2.5 or 1e100 for a whole-number field
	}
	return "number"
}

// fieldLen checks a text field's length in characters: required fields must be non-empty.
func fieldLen(field, value string, required bool, max int) error {
	n := utf8.RuneCountInString(value)
	if required && n == 0 {
		return errcode.Invalid(field, "is required")
	}
	if n > max {
		return errcode.Invalid(field, fmt.Sprintf("must be at most %d characters", max))
	}
	return nil
}
