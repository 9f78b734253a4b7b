package kb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/kb"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// cookingNotes are a small knowledge base of a cooking creator, in both languages.
var cookingNotes = map[string]string{
	"tofu": "## Crispy tofu\n\nPress extra-firm tofu for ten minutes before frying. Fry it in a hot pan for 8 minutes, turning once. " +
		"A block of extra-firm tofu costs 2.40 dollars at the corner shop.",
	"sponsors": "| name | pay | channel |\n| --- | --- | --- |\n| OatBloom | 300 dollars a video | douyin |\n| Soyful | 180 dollars a video | bilibili |\n\n" +
		"OatBloom is an oat milk brand from Hangzhou.",
	"schedule": "# 更新计划\n\n每周二和周五晚上 8 点发布新视频。素食晚餐系列每集不超过 3 分钟。拍摄前一天准备好所有食材。",
	"pasta":    "Cook the lentil pasta for 7 minutes in salted water. Save a cup of the pasta water for the sauce.",
}

func cookingBase(t *testing.T, d store.Driver, s *kb.Service) string {
	t.Helper()
	u := storetest.NewUser(t, d, "")
	for title, text := range cookingNotes {
		ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "cooking", Visibility: store.VisibilityPrivate, Title: title, Text: text})
	}
	return u.ID
}

func TestAskKnowsWhenItDoesNotKnow(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		user := cookingBase(t, d, s)
		for _, q := range []string{"What is the capital of France?", "Who wrote Pride and Prejudice?", "What is it?", "How does it work?",
			"法国的首都是哪里？", "这是什么？", "How much does a Tesla cost?", "比特币现在多少钱？", "How long does it take to fly to Paris?"} {
			a, err := s.Ask(ctx, kb.SearchParams{UserID: user, Query: q, TopK: 5})
			if err != nil {
				t.Fatal(err)
			}
			if a.Answer != kb.NoBasisAnswer || len(a.Citations) != 0 || a.Cited || a.Hits == nil {
				t.Errorf("Ask(%q) = %q with %d citations, want the no-basis answer without citations", q, a.Answer, len(a.Citations))
			}
			if hits, err := s.SearchForAnswer(ctx, user, "", "", q, 5); err != nil || len(hits) != 0 {
				t.Errorf("SearchForAnswer(%q) = %d hits, %v; want none (a chat has no basis either)", q, len(hits), err)
			}
		}
		for q, want := range map[string]string{
			"How much does OatBloom pay?":           "300 dollars a video",
			"How long should I press the tofu?":     "ten minutes",
			"How much does extra-firm tofu cost?":   "2.40 dollars",
			"Which brand pays 180 dollars a video?": "Soyful",
			"素食晚餐系列每集多长？":                           "不超过 3 分钟",
			"每周什么时候发布新视频？":                          "每周二和周五晚上 8 点",
			"How long do I cook lentil pasta?":      "7 minutes",
		} {
			a, err := s.Ask(ctx, kb.SearchParams{UserID: user, Query: q, TopK: 5})
			if err != nil {
				t.Fatal(err)
			}
			if hits, err := s.SearchForAnswer(ctx, user, "", "", q, 5); err != nil || len(hits) == 0 {
				t.Errorf("SearchForAnswer(%q) = %d hits, %v; want the grounding passage", q, len(hits), err)
			}
			first, _, _ := strings.Cut(a.Answer, "[#")
			if !strings.Contains(first, want) || len(a.Citations) == 0 {
				t.Errorf("Ask(%q) = %q, want its first sentence to hold %q, cited", q, a.Answer, want)
			}
			if strings.ContainsAny(a.Answer, "|#") && !strings.Contains(a.Answer, "[#") {
				t.Errorf("Ask(%q) = %q quotes markup", q, a.Answer)
			}
		}
	})
}

func TestStopAndQuestionWordsNeverMakeAHit(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "words", Visibility: store.VisibilityPrivate, Title: "words",
			Text: "What is it? This is what it is, and that is how it is. 这是什么？这就是它。"})
		for _, q := range []string{"What is it?", "what is this and how is it", "这是什么？"} {
			if hits, err := s.Search(ctx, kb.SearchParams{UserID: u.ID, Query: q, TopK: 5}); err != nil || len(hits) != 0 {
				t.Errorf("Search(%q) = %d hits, %v; want none", q, len(hits), err)
			}
		}
	})
}

func TestAskCitesStoredFacts(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		user := cookingBase(t, d, s)
		if _, err := s.PutFact(ctx, user, "filming day", "We film every Sunday morning in the studio kitchen."); err != nil {
			t.Fatal(err)
		}
		a, err := s.Ask(ctx, kb.SearchParams{UserID: user, Query: "Which day is filming day?", TopK: 5})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(a.Answer, "every Sunday morning") || len(a.Citations) == 0 || a.Citations[0].Source != kb.FactSource {
			t.Fatalf("Ask = %q, citations %+v; want the stored fact, cited", a.Answer, a.Citations)
		}
		found := false
		for _, h := range a.Hits {
			found = found || h.ChunkID == a.Citations[0].ChunkID
		}
		if !found {
			t.Errorf("the fact's citation %q is not among the hits", a.Citations[0].ChunkID)
		}
	})
}

// TestAskInALanguageWithoutStopList: the rule of ask holds for a language the stop lists do not
// cover: its function words (de, la, el) are in many chunks and weigh little, and what the base
// never saw (Francia, Eiffel, Madrid) still outweighs them.
func TestAskInALanguageWithoutStopList(t *testing.T) {
	t.Parallel()
	facts := []string{
		"La panadería abre a las 7 de la mañana de lunes a sábado.", "El pan integral cuesta 2,40 euros la pieza.",
		"La masa madre se alimenta dos veces al día con harina de centeno.", "El horno de leña se enciende a las 5 de la mañana.",
		"Los croissants de mantequilla se hornean durante 18 minutos.", "La tarta de queso es la más vendida de la tienda.",
		"El repartidor sale a las 8 con los pedidos de los restaurantes.", "Los domingos la tienda cierra a las 2 de la tarde.",
		"La harina que usamos viene de un molino de Navarra.", "El pan de centeno lleva semillas de alcaravea.",
		"Las baguettes se venden a 1,20 euros.", "El obrador tiene tres empleados en el turno de noche.",
		"La empanada gallega se prepara los viernes.", "Los pedidos grandes se piden con dos días de antelación.",
		"La tienda acepta pagos con tarjeta y en efectivo.", "El roscón de reyes solo se hace en enero.",
		"Las magdalenas llevan aceite de oliva y ralladura de limón.", "El precio del café con leche es de 1,80 euros.",
		"La fermentación del pan rústico dura 24 horas en frío.", "El local tiene seis mesas y una terraza pequeña.",
		"Las galletas de avena no llevan azúcar añadido.", "El pan sin gluten se hace en una sala separada.",
		"La dueña de la panadería se llama Marta Ruiz.", "El wifi de la tienda es gratis para los clientes.",
	}
	forEachDriver(t, func(t *testing.T, d store.Driver, s *kb.Service) {
		ctx := context.Background()
		u := storetest.NewUser(t, d, "")
		for i, f := range facts {
			ingest(t, s, kb.IngestParams{UserID: u.ID, SourceName: "panaderia", Visibility: store.VisibilityPrivate, Title: f[:12] + string(rune('a'+i)), Text: f})
		}
		for q, want := range map[string]string{
			"¿Cuál es la capital de Francia?":               kb.NoBasisAnswer,
			"¿Cómo se cambia la rueda de una bicicleta?":    kb.NoBasisAnswer,
			"¿Cuánto cuesta el pan integral?":               "2,40 euros",
			"¿Cuánto dura la fermentación del pan rústico?": "24 horas",
			"¿Cómo se llama la dueña de la panadería?":      "Marta Ruiz",
		} {
			a, err := s.Ask(ctx, kb.SearchParams{UserID: u.ID, Query: q, TopK: 5})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(a.Answer, want) {
				t.Errorf("Ask(%q) = %q, want %q", q, a.Answer, want)
			}
		}
	})
}
