// Decoder conformance: golden payloads, reference behaviours B4–B23 and
// project cases P1–P10 that concern decoding (docs/bridge-events.md,
// "Golden payloads", "Reference behaviours" and
// "Reference behaviours > Project cases"), and malformed input.
#include "bridge/event_decoder.h"

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bridge/tests/action_text.h"
#include "bridge/tests/golden_payloads.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/msgpack_builders.h"

namespace kvindexer::bridge {
namespace {

using ::kvindexer::bridge::testing::Batch;
using ::kvindexer::bridge::testing::ClearEvent;
using ::kvindexer::bridge::testing::DecodeAndDescribe;
using ::kvindexer::bridge::testing::FromHex;
using ::kvindexer::bridge::testing::Hashes;
using ::kvindexer::bridge::testing::kH0;
using ::kvindexer::bridge::testing::kH1;
using ::kvindexer::bridge::testing::Labels;
using ::kvindexer::bridge::testing::Mp;
using ::kvindexer::bridge::testing::MpArray;
using ::kvindexer::bridge::testing::MpBin;
using ::kvindexer::bridge::testing::MpMap;
using ::kvindexer::bridge::testing::Pack;
using ::kvindexer::bridge::testing::PackBatch;
using ::kvindexer::bridge::testing::RemoveEvent;
using ::kvindexer::bridge::testing::StoreEvent;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

using Actions = std::vector<std::string>;

const std::string kH0s = std::to_string(kH0);
const std::string kH1s = std::to_string(kH1);

DecodedBatch MustDecode(std::string_view payload) {
  DecodedBatch batch;
  absl::Status status = EventDecoder().Decode(payload, &batch);
  EXPECT_TRUE(status.ok()) << status;
  return batch;
}

std::vector<EventSkipReason> SkipReasons(const DecodedBatch& batch) {
  std::vector<EventSkipReason> out;
  for (const auto& s : batch.skipped) out.push_back(s.reason);
  return out;
}

// --- Golden payloads ------------------------------------------------------

TEST(EventDecoderGolden, G1MixedBatch) {  // B21
  EXPECT_EQ(
      DecodeAndDescribe(FromHex(testing::kGoldenG1)),
      (Actions{"REPORT HBM [1234567890123,-987654321]", "REVOKE SSD [100,200]",
               "CLEAR HBM", "CLEAR DRAM", "CLEAR SSD"}));
}

TEST(EventDecoderGolden, G2BigramTokens) {  // B22
  EXPECT_EQ(DecodeAndDescribe(FromHex(testing::kGoldenG2)),
            (Actions{"REPORT HBM [111]"}));
}

TEST(EventDecoderGolden, G3NilMediumYieldsNothing) {  // B23
  DecodedBatch batch = MustDecode(FromHex(testing::kGoldenG3));
  EXPECT_THAT(batch.events, IsEmpty());
  EXPECT_EQ(batch.event_count, 2u);
  EXPECT_THAT(SkipReasons(batch), ElementsAre(EventSkipReason::kMissingMedium,
                                              EventSkipReason::kMissingMedium));
  EXPECT_THAT(batch.hashes, IsEmpty());
  EXPECT_THAT(DecodeAndDescribe(FromHex(testing::kGoldenG3)), IsEmpty());
}

TEST(EventDecoderGolden, X1TwoStoresMerge) {  // P1
  EXPECT_EQ(DecodeAndDescribe(FromHex(testing::kGoldenX1)),
            (Actions{"REPORT HBM [" + kH0s + "," + kH1s + "]"}));
}

TEST(EventDecoderGolden, X2CoalescedStore) {
  EXPECT_EQ(DecodeAndDescribe(FromHex(testing::kGoldenX2)),
            (Actions{"REPORT HBM [" + kH0s + "," + kH1s + "]"}));
}

TEST(EventDecoderGolden, X3ComponentStore) {
  EXPECT_EQ(DecodeAndDescribe(FromHex(testing::kGoldenX3)),
            (Actions{"REPORT HBM [" + kH0s + "] masks=[3] sizes=[4]"}));
}

TEST(EventDecoderGolden, X4RemovePlusClear) {
  EXPECT_EQ(DecodeAndDescribe(FromHex(testing::kGoldenX4)),
            (Actions{"REVOKE HBM [" + kH0s + "," + kH1s + "]", "CLEAR HBM",
                     "CLEAR DRAM", "CLEAR SSD"}));
}

TEST(EventDecoderGolden, X5TaggedMapStore) {
  EXPECT_EQ(DecodeAndDescribe(FromHex(testing::kGoldenX5)),
            (Actions{"REPORT HBM [" + kH0s + "]"}));
}

// Our packer reproduces SGLang's bytes, so builder-made fixtures are faithful.
TEST(EventDecoderGolden, BuilderReproducesX1AndX3Bytes) {
  MpArray x1{StoreEvent({kH0}, "GPU"), StoreEvent({kH1}, "GPU")};
  std::get<MpArray>(x1[0].v)[3] = MpArray{1, 2, 3, 4};
  std::get<MpArray>(x1[1].v)[2] = Mp(kH0);
  std::get<MpArray>(x1[1].v)[3] = MpArray{5, 6, 7, 8};
  EXPECT_EQ(testing::ToHex(PackBatch(x1, 1700000000.5, 0)), testing::kGoldenX1);

  MpArray x3{StoreEvent({kH0}, "GPU", 4, Labels({"full", "swa"}))};
  std::get<MpArray>(x3[0].v)[3] = MpArray{1, 2, 3, 4};
  EXPECT_EQ(testing::ToHex(PackBatch(x3, 1700000000.5, 0)), testing::kGoldenX3);
}

// --- Reference behaviours -----------------------------------------------

TEST(EventDecoderReference, B4RemoveThenStoreKeepOrder) {
  EXPECT_EQ(DecodeAndDescribe(PackBatch(
                {RemoveEvent({9}, "GPU"), StoreEvent({9}, "CPU_PINNED")})),
            (Actions{"REVOKE HBM [9]", "REPORT DRAM [9]"}));
}

TEST(EventDecoderReference, B5ClearExpandsInPlace) {
  EXPECT_EQ(DecodeAndDescribe(PackBatch({StoreEvent({1}, "GPU"), ClearEvent(),
                                         StoreEvent({2}, "GPU")})),
            (Actions{"REPORT HBM [1]", "CLEAR HBM", "CLEAR DRAM", "CLEAR SSD",
                     "REPORT HBM [2]"}));
}

TEST(EventDecoderReference, B6OnlyUnknownTagYieldsNothing) {
  std::string payload =
      PackBatch({MpArray{Mp("BlockUpdated"), Hashes({1}), Mp("GPU")}});
  DecodedBatch batch = MustDecode(payload);
  EXPECT_THAT(batch.events, IsEmpty());
  EXPECT_THAT(SkipReasons(batch), ElementsAre(EventSkipReason::kUnknownTag));
  EXPECT_THAT(DecodeAndDescribe(payload), IsEmpty());
}

TEST(EventDecoderReference, B7MediumTiers) {
  EXPECT_EQ(DecodeAndDescribe(PackBatch({StoreEvent({1}, "GPU")})),
            (Actions{"REPORT HBM [1]"}));
  EXPECT_EQ(DecodeAndDescribe(PackBatch({StoreEvent({1}, "CPU_PINNED")})),
            (Actions{"REPORT DRAM [1]"}));
  EXPECT_EQ(DecodeAndDescribe(PackBatch({RemoveEvent({1}, "DISK")})),
            (Actions{"REVOKE SSD [1]"}));
}

TEST(EventDecoderReference, B8BadEventDroppedAlone) {
  std::string payload =
      PackBatch({StoreEvent({1}, "GPU"), StoreEvent({2}, "EXTERNAL"),
                 RemoveEvent({3}, "DISK")});
  EXPECT_EQ(DecodeAndDescribe(payload),
            (Actions{"REPORT HBM [1]", "REVOKE SSD [3]"}));
  DecodedBatch batch = MustDecode(payload);
  ASSERT_EQ(batch.skipped.size(), 1u);
  EXPECT_EQ(batch.skipped[0].index, 1u);
  EXPECT_EQ(batch.skipped[0].reason, EventSkipReason::kUnknownMedium);
  EXPECT_THAT(batch.skipped[0].detail, ::testing::HasSubstr("EXTERNAL"));
}

TEST(EventDecoderReference, B10OrderingAndMerging) {
  EXPECT_EQ(DecodeAndDescribe(PackBatch({ClearEvent(), StoreEvent({1}, "GPU")}),
                              {Tier::kHbm}),
            (Actions{"CLEAR HBM", "REPORT HBM [1]"}));
  EXPECT_EQ(DecodeAndDescribe(PackBatch({StoreEvent({1}, "GPU"), ClearEvent()}),
                              {Tier::kHbm}),
            (Actions{"REPORT HBM [1]", "CLEAR HBM"}));
  EXPECT_EQ(DecodeAndDescribe(
                PackBatch({StoreEvent({1}, "GPU"), StoreEvent({2, 3}, "GPU")})),
            (Actions{"REPORT HBM [1,2,3]"}));
  EXPECT_EQ(DecodeAndDescribe(PackBatch(
                {StoreEvent({1}, "GPU"), StoreEvent({2}, "CPU_PINNED")})),
            (Actions{"REPORT HBM [1]", "REPORT DRAM [2]"}));
  EXPECT_EQ(DecodeAndDescribe(
                PackBatch({StoreEvent({1}, "GPU"), RemoveEvent({1}, "GPU")})),
            (Actions{"REPORT HBM [1]", "REVOKE HBM [1]"}));
  EXPECT_EQ(
      DecodeAndDescribe(PackBatch({StoreEvent({1}, "GPU"),
                                   MpArray{Mp("BlockUpdated"), Hashes({7})},
                                   StoreEvent({2}, "GPU")})),
      (Actions{"REPORT HBM [1,2]"}));
}

TEST(EventDecoderReference, B11TwoElementBatchDecodes) {
  std::string payload = Pack(MpArray{Mp(1.0), MpArray{StoreEvent({5}, "GPU")}});
  EXPECT_EQ(DecodeAndDescribe(payload), (Actions{"REPORT HBM [5]"}));
}

TEST(EventDecoderReference, B12NegativeHashStaysSigned) {
  EXPECT_EQ(
      DecodeAndDescribe(PackBatch({StoreEvent({-1905904552702706914}, "GPU")})),
      (Actions{"REPORT HBM [-1905904552702706914]"}));
}

TEST(EventDecoderReference, B13UnsignedReinterpretation) {
  MpArray hashes{Mp(uint64_t{1}), Mp(int64_t{-2}),
                 Mp(uint64_t{9223372036854775807ull}),
                 Mp(std::numeric_limits<uint64_t>::max()),
                 Mp(uint64_t{9223372036854775808ull})};
  MpArray ev{Mp("BlockStored"), Mp(hashes), Mp(nullptr), MpArray{}, Mp(4),
             Mp(nullptr),       Mp("GPU")};
  DecodedBatch batch = MustDecode(PackBatch({Mp(ev)}));
  EXPECT_THAT(batch.hashes,
              ElementsAre(1, -2, std::numeric_limits<int64_t>::max(), -1,
                          std::numeric_limits<int64_t>::min()));

  MpArray bad{
      Mp("BlockStored"), MpArray{Mp("123")}, Mp(nullptr), MpArray{}, Mp(4),
      Mp(nullptr),       Mp("GPU")};
  DecodedBatch skipped = MustDecode(PackBatch({Mp(bad)}));
  EXPECT_THAT(skipped.events, IsEmpty());
  EXPECT_THAT(SkipReasons(skipped), ElementsAre(EventSkipReason::kBadHashes));
}

TEST(EventDecoderReference, B15MediumMapping) {
  for (const char* medium : {"EXTERNAL", "TAPE", "CPU", "gpu", ""}) {
    DecodedBatch batch = MustDecode(PackBatch({StoreEvent({1}, medium)}));
    EXPECT_THAT(batch.events, IsEmpty()) << medium;
    EXPECT_THAT(SkipReasons(batch),
                ElementsAre(EventSkipReason::kUnknownMedium))
        << medium;
  }
  DecodedBatch nil = MustDecode(PackBatch({StoreEvent({1}, std::nullopt)}));
  EXPECT_THAT(SkipReasons(nil), ElementsAre(EventSkipReason::kMissingMedium));
  EXPECT_THAT(nil.hashes, IsEmpty());
}

TEST(EventDecoderReference, B17ComponentStore) {
  EXPECT_EQ(DecodeAndDescribe(PackBatch(
                {StoreEvent({1}, "GPU", 64, Labels({"full", "swa"}))})),
            (Actions{"REPORT HBM [1] masks=[3] sizes=[64]"}));
  EXPECT_EQ(
      DecodeAndDescribe(PackBatch({StoreEvent({1}, "GPU", 64, Mp(nullptr))})),
      (Actions{"REPORT HBM [1]"}));
}

TEST(EventDecoderReference, B18ComponentStoresMerge) {
  EXPECT_EQ(DecodeAndDescribe(
                PackBatch({StoreEvent({1}, "GPU", 64, Labels({"full", "swa"})),
                           StoreEvent({2}, "GPU", 32, Labels({"full"}))})),
            (Actions{"REPORT HBM [1,2] masks=[3,1] sizes=[64,32]"}));
}

// --- Project cases -------------------------------------------------------

TEST(EventDecoderProject, P2BarrierBatchYieldsNoActions) {
  DecodedBatch batch = MustDecode(PackBatch({}));
  EXPECT_EQ(batch.event_count, 0u);
  EXPECT_THAT(DecodeAndDescribe(PackBatch({})), IsEmpty());
}

TEST(EventDecoderProject, P3SingleStringLabel) {
  EXPECT_EQ(
      DecodeAndDescribe(PackBatch({StoreEvent({1}, "GPU", 16, Mp("swa"))})),
      (Actions{"REPORT HBM [1] masks=[2] sizes=[16]"}));
  EXPECT_EQ(
      DecodeAndDescribe(PackBatch({StoreEvent({1}, "GPU", 16, Mp("weird"))})),
      (Actions{"REPORT HBM [1] masks=[0] sizes=[16]"}));
}

TEST(EventDecoderProject, P4MetadataMapIsLegacy) {
  EXPECT_EQ(DecodeAndDescribe(PackBatch({StoreEvent(
                {1}, "GPU", 16, MpMap{{Mp("cache_salt"), Mp("s")}})})),
            (Actions{"REPORT HBM [1]"}));
}

TEST(EventDecoderProject, P5EmptyOrUnknownLabelsGiveMaskZero) {
  EXPECT_EQ(
      DecodeAndDescribe(PackBatch({StoreEvent({1}, "GPU", 8, Labels({}))})),
      (Actions{"REPORT HBM [1] masks=[0] sizes=[8]"}));
  EXPECT_EQ(DecodeAndDescribe(PackBatch(
                {StoreEvent({1}, "GPU", 8, Labels({"bogus", "other"}))})),
            (Actions{"REPORT HBM [1] masks=[0] sizes=[8]"}));
  EXPECT_EQ(DecodeAndDescribe(PackBatch(
                {StoreEvent({1}, "GPU", 8, Labels({"mamba", "FULL"}))})),
            (Actions{"REPORT HBM [1] masks=[5] sizes=[8]"}));
}

TEST(EventDecoderProject, P6BadBlockSizeSkipsOnlyThatStore) {
  auto with_size = [](Mp size) {
    Mp ev = StoreEvent({2}, "GPU", 4, Labels({"full"}));
    std::get<MpArray>(ev.v)[4] = std::move(size);
    return ev;
  };
  for (Mp size : {Mp(-1), Mp(uint64_t{4294967296ull}), Mp(1.5), Mp("64"),
                  Mp(nullptr), Mp(MpArray{Mp(4)})}) {
    std::string payload =
        PackBatch({StoreEvent({1}, "GPU", 4, Labels({"full"})), with_size(size),
                   RemoveEvent({3}, "GPU")});
    EXPECT_EQ(
        DecodeAndDescribe(payload),
        (Actions{"REPORT HBM [1] masks=[1] sizes=[4]", "REVOKE HBM [3]"}));
    EXPECT_THAT(SkipReasons(MustDecode(payload)),
                ElementsAre(EventSkipReason::kBadBlockSize));
  }
  // Boundary values are accepted.
  EXPECT_EQ(
      DecodeAndDescribe(PackBatch({with_size(Mp(uint64_t{4294967295ull}))})),
      (Actions{"REPORT HBM [2] masks=[1] sizes=[4294967295]"}));
  EXPECT_EQ(DecodeAndDescribe(PackBatch({with_size(Mp(0))})),
            (Actions{"REPORT HBM [2] masks=[1] sizes=[0]"}));
  // A legacy store never reads block_size.
  Mp legacy = StoreEvent({4}, "GPU");
  std::get<MpArray>(legacy.v)[4] = Mp("not a size");
  EXPECT_EQ(DecodeAndDescribe(PackBatch({legacy})),
            (Actions{"REPORT HBM [4]"}));
}

TEST(EventDecoderProject, P7EarlyErasSkippedClearStillExpands) {
  MpArray e0_store{Mp("BlockStored"), Hashes({1}), Mp(nullptr),
                   MpArray{1, 2},     Mp(2),       Mp(nullptr)};
  MpArray e0_remove{Mp("BlockRemoved"), Hashes({1})};
  // E0 batch has no dp rank; E1 adds it.
  std::string e0 =
      Pack(MpArray{Mp(1.0), MpArray{e0_store, ClearEvent(), e0_remove}});
  std::string e1 = PackBatch({e0_store, ClearEvent(), e0_remove});
  for (const std::string& payload : {e0, e1}) {
    EXPECT_EQ(DecodeAndDescribe(payload),
              (Actions{"CLEAR HBM", "CLEAR DRAM", "CLEAR SSD"}));
    EXPECT_THAT(SkipReasons(MustDecode(payload)),
                ElementsAre(EventSkipReason::kMissingMedium,
                            EventSkipReason::kMissingMedium));
  }
}

TEST(EventDecoderProject, P8MapRemoveWithoutMediumSkipped) {
  Mp remove = MpMap{{Mp("type"), Mp("BlockRemoved")},
                    {Mp("block_hashes"), Hashes({5})}};
  DecodedBatch batch = MustDecode(PackBatch({remove, StoreEvent({6}, "GPU")}));
  EXPECT_THAT(SkipReasons(batch), ElementsAre(EventSkipReason::kMissingMedium));
  EXPECT_EQ(DecodeAndDescribe(PackBatch({remove, StoreEvent({6}, "GPU")})),
            (Actions{"REPORT HBM [6]"}));
}

TEST(EventDecoderProject, P9BadEnvelopeFailsBatch) {
  const std::vector<std::string> payloads = {
      Pack(Mp(5)),
      Pack(Mp("batch")),
      Pack(MpMap{{Mp("events"), MpArray{}}}),
      Pack(MpArray{}),
      Pack(MpArray{Mp(1.0)}),
      Pack(MpArray{Mp(1.0), Mp(nullptr)}),
      Pack(MpArray{Mp(1.0), Mp("events")}),
      Pack(MpArray{Mp(1.0), MpMap{{Mp("type"), Mp("AllBlocksCleared")}}}),
  };
  for (const std::string& payload : payloads) {
    DecodedBatch batch;
    EXPECT_FALSE(EventDecoder().Decode(payload, &batch).ok())
        << testing::ToHex(payload);
    EXPECT_THAT(batch.events, IsEmpty());
  }
}

TEST(EventDecoderProject, P10MarkersDecodeToEncodedValues) {
  // cf-encoded hash below 2^63 and d3-encoded negative hash (X2 bytes).
  DecodedBatch batch = MustDecode(FromHex(testing::kGoldenX2));
  EXPECT_THAT(batch.hashes, ElementsAre(kH0, kH1));
  // Every integer marker is accepted for hashes.
  std::string ev = FromHex(
      "93ac426c6f636b52656d6f766564"  // ["BlockRemoved",
      "9a"                            //  10 hashes:
      "05"
      "e0"
      "cc80"
      "cd0100"
      "ce00010000"
      "cf0000000100000000"
      "d0ff"
      "d1fffe"
      "d2fffffffd"
      "d3fffffffffffffffc"
      "a3475055");  //  "GPU"]
  std::string payload = FromHex("9201") + FromHex("91") + ev;
  DecodedBatch all = MustDecode(payload);
  EXPECT_THAT(all.hashes, ElementsAre(5, -32, 128, 256, 65536, 4294967296LL, -1,
                                      -2, -3, -4));
}

// --- map form and component-type variants --------------------------------

TEST(EventDecoderVariants, MapEventKeysInAnyOrder) {
  Mp store = MpMap{{Mp("medium"), Mp("CPU_PINNED")},
                   {Mp("block_size"), Mp(16)},
                   {Mp("unknown_key"), MpArray{MpMap{}}},
                   {Mp(7), Mp("non-string key")},
                   {Mp("block_hashes"), Hashes({10, 11})},
                   {Mp("component_types"), Labels({"full", "mamba"})},
                   {Mp("type"), Mp("BlockStored")}};
  EXPECT_EQ(DecodeAndDescribe(PackBatch({store})),
            (Actions{"REPORT DRAM [10,11] masks=[5,5] sizes=[16,16]"}));
}

TEST(EventDecoderVariants, MapClearAndUnknownType) {
  EXPECT_EQ(
      DecodeAndDescribe(PackBatch({MpMap{{Mp("type"), Mp("AllBlocksCleared")}},
                                   MpMap{{Mp("type"), Mp("BlockUpdated")}}}),
                        {Tier::kDram}),
      (Actions{"CLEAR DRAM"}));
  DecodedBatch batch = MustDecode(PackBatch(
      {MpMap{{Mp("block_hashes"), Hashes({1})}, {Mp("medium"), Mp("GPU")}},
       MpMap{{Mp("type"), Mp(3)}, {Mp("block_hashes"), Hashes({1})}}}));
  EXPECT_THAT(SkipReasons(batch), ElementsAre(EventSkipReason::kMissingTag,
                                              EventSkipReason::kMissingTag));
  EXPECT_THAT(batch.hashes, IsEmpty());
}

TEST(EventDecoderVariants, ComponentTypeKeyAndPrecedence) {
  auto store = [](MpMap extra) {
    MpMap m{{Mp("type"), Mp("BlockStoredWithComponentType")},
            {Mp("block_hashes"), Hashes({1})},
            {Mp("block_size"), Mp(32)},
            {Mp("medium"), Mp("GPU")}};
    for (auto& kv : extra) m.push_back(std::move(kv));
    return PackBatch({Mp(std::move(m))});
  };
  EXPECT_EQ(DecodeAndDescribe(store({{Mp("component_type"), Mp("swa")}})),
            (Actions{"REPORT HBM [1] masks=[2] sizes=[32]"}));
  EXPECT_EQ(
      DecodeAndDescribe(store({{Mp("component_type"), Mp("swa")},
                               {Mp("component_types"), Labels({"full"})}})),
      (Actions{"REPORT HBM [1] masks=[1] sizes=[32]"}));
  EXPECT_EQ(DecodeAndDescribe(store({{Mp("component_types"), Labels({"mamba"})},
                                     {Mp("component_type"), Mp("swa")}})),
            (Actions{"REPORT HBM [1] masks=[4] sizes=[32]"}));
  EXPECT_EQ(DecodeAndDescribe(store({})), (Actions{"REPORT HBM [1]"}));
  EXPECT_EQ(DecodeAndDescribe(store({{Mp("component_type"), Mp(5)}})),
            (Actions{}));
}

TEST(EventDecoderVariants, WithComponentTypeTagsInArrayForm) {
  Mp store = StoreEvent({1}, "GPU", 8, Mp("mamba"));
  std::get<MpArray>(store.v)[0] = Mp("BlockStoredWithComponentType");
  Mp store_meta = StoreEvent({2}, "GPU", 8, Labels({"full"}));
  std::get<MpArray>(store_meta.v)[0] =
      Mp("BlockStoredWithComponentTypeAndMetadata");
  std::get<MpArray>(store_meta.v).push_back(MpMap{{Mp("cache_salt"), Mp("x")}});
  MpArray remove{Mp("BlockRemovedWithComponentType"), Hashes({3}), Mp("GPU"),
                 Mp("swa")};
  EXPECT_EQ(
      DecodeAndDescribe(PackBatch({store, store_meta, Mp(remove)})),
      (Actions{"REPORT HBM [1,2] masks=[4,1] sizes=[8,8]", "REVOKE HBM [3]"}));
}

TEST(EventDecoderVariants, MixedLegacyAndComponentStoresMerge) {
  EXPECT_EQ(DecodeAndDescribe(PackBatch({StoreEvent({1}, "GPU"),
                                         StoreEvent({2}, "GPU", 8, Mp("full")),
                                         StoreEvent({3}, "GPU")})),
            (Actions{"REPORT HBM [1,2,3] masks=[0,1,0] sizes=[0,8,0]"}));
}

TEST(EventDecoderVariants, ClearExtraSlotsIgnoredAndEmptyHashListsDropped) {
  EXPECT_EQ(DecodeAndDescribe(
                PackBatch({MpArray{Mp("AllBlocksCleared"), Mp(1), Mp("x")},
                           StoreEvent({}, "GPU"), RemoveEvent({}, "GPU")}),
                {Tier::kSsd}),
            (Actions{"CLEAR SSD"}));
}

TEST(EventDecoderVariants, ExtraSlotsAndIgnoredFieldsOfAnyType) {
  Mp ev = StoreEvent({1}, "GPU", 4, Labels({"full"}));
  auto& a = std::get<MpArray>(ev.v);
  a[2] = Mp("parent as string");
  a[3] = MpMap{{Mp(1), Mp(2)}};
  a[5] = Mp(MpBin{"lora"});
  a.push_back(Mp(1.25));
  a.push_back(MpArray{MpArray{MpArray{}}});
  EXPECT_EQ(DecodeAndDescribe(PackBatch({ev}, 0.0, std::nullopt)),
            (Actions{"REPORT HBM [1] masks=[1] sizes=[4]"}));
  // ts and dp rank are ignored whatever their type.
  EXPECT_EQ(DecodeAndDescribe(Pack(MpArray{
                Mp("ts"), MpArray{StoreEvent({1}, "GPU")}, MpMap{}, Mp(7)})),
            (Actions{"REPORT HBM [1]"}));
}

// --- malformed input ------------------------------------------------------

TEST(EventDecoderMalformed, WrongTypeAtEverySlot) {
  const std::vector<Mp> wrong = {
      Mp(nullptr), Mp(true),          Mp(-5),           Mp(2.5),
      Mp("str"),   Mp(MpBin{"\x01"}), MpArray{Mp("x")}, MpMap{{Mp(1), Mp(2)}}};
  for (size_t slot = 0; slot < 8; ++slot) {
    for (const Mp& value : wrong) {
      Mp ev = StoreEvent({42}, "GPU", 4, Labels({"full"}));
      std::get<MpArray>(ev.v)[slot] = value;
      std::string payload =
          PackBatch({StoreEvent({1}, "GPU"), ev, RemoveEvent({2}, "GPU")});
      DecodedBatch batch = MustDecode(payload);
      // The neighbours always survive; event 1 either decodes or is skipped.
      ASSERT_GE(batch.events.size(), 2u) << "slot " << slot;
      EXPECT_EQ(batch.events.size() + batch.skipped.size(), 3u);
      for (const auto& s : batch.skipped) EXPECT_EQ(s.index, 1u);
      const bool ignored_slot = slot == 2 || slot == 3 || slot == 5;
      if (ignored_slot) {
        EXPECT_THAT(batch.skipped, IsEmpty()) << slot;
      }
      if (slot == 0 || slot == 1 || slot == 4 || slot == 6) {
        EXPECT_EQ(batch.skipped.size(), 1u) << "slot " << slot;
      }
      // Hashes of a skipped event never leak into the batch.
      if (!batch.skipped.empty()) {
        EXPECT_THAT(batch.hashes, ElementsAre(1, 2));
      }
    }
  }
}

TEST(EventDecoderMalformed, NonIntegerHashesSkipEvent) {
  for (Mp bad : {Mp(1.0), Mp("1"), Mp(MpBin{std::string(32, '\x07')}),
                 Mp(nullptr), Mp(true), Mp(MpArray{Mp(1)}), Mp(MpMap{})}) {
    Mp ev = RemoveEvent({1, 2}, "GPU");
    std::get<MpArray>(std::get<MpArray>(ev.v)[1].v).push_back(bad);
    DecodedBatch batch = MustDecode(PackBatch({ev, StoreEvent({9}, "GPU")}));
    EXPECT_THAT(SkipReasons(batch), ElementsAre(EventSkipReason::kBadHashes));
    EXPECT_THAT(batch.hashes, ElementsAre(9));
  }
}

TEST(EventDecoderMalformed, NonEventValuesInEventList) {
  DecodedBatch batch =
      MustDecode(PackBatch({Mp(1), Mp("BlockStored"), Mp(nullptr), MpArray{},
                            MpArray{Mp(5)}, MpMap{}, StoreEvent({3}, "GPU")}));
  EXPECT_THAT(
      SkipReasons(batch),
      ElementsAre(EventSkipReason::kNotAnEvent, EventSkipReason::kNotAnEvent,
                  EventSkipReason::kNotAnEvent, EventSkipReason::kMissingTag,
                  EventSkipReason::kMissingTag, EventSkipReason::kMissingTag));
  EXPECT_EQ(batch.events.size(), 1u);
  EXPECT_EQ(batch.event_count, 7u);
}

TEST(EventDecoderMalformed, BadComponentLabels) {
  DecodedBatch batch = MustDecode(PackBatch(
      {StoreEvent({1}, "GPU", 4, MpArray{Mp("full"), Mp(3)}),
       StoreEvent({2}, "GPU", 4, Mp(7)), StoreEvent({3}, "GPU", 4, Mp(true)),
       StoreEvent({4}, "GPU", 4, MpArray{MpArray{}})}));
  EXPECT_THAT(SkipReasons(batch), ElementsAre(EventSkipReason::kBadComponents,
                                              EventSkipReason::kBadComponents,
                                              EventSkipReason::kBadComponents,
                                              EventSkipReason::kBadComponents));
  EXPECT_THAT(batch.hashes, IsEmpty());
}

TEST(EventDecoderMalformed, EveryTruncationOfEveryGoldenFails) {
  for (const char* hex :
       {testing::kGoldenG1, testing::kGoldenG2, testing::kGoldenG3,
        testing::kGoldenX1, testing::kGoldenX2, testing::kGoldenX3,
        testing::kGoldenX4, testing::kGoldenX5}) {
    const std::string full = FromHex(hex);
    for (size_t n = 0; n < full.size(); ++n) {
      DecodedBatch batch;
      EXPECT_FALSE(EventDecoder().Decode(full.substr(0, n), &batch).ok())
          << "prefix " << n << " of " << hex;
      EXPECT_THAT(batch.events, IsEmpty());
      EXPECT_THAT(batch.hashes, IsEmpty());
    }
  }
}

TEST(EventDecoderMalformed, AbsurdLengthsAreCheap) {
  const std::vector<std::string> hexes = {
      "ddffffffff",      // root array of 2^32-1
      "92c0ddffffffff",  // events list of 2^32-1
      "92c091dcffff",    // event claiming 65535 slots
      "92c09193ab426c6f636b52656d6f766564ddffffffff",  // hash list 2^32-1
      "92c091dfffffffff",    // event map of 2^32-1 pairs
      "dfffffffff",          // root map of 2^32-1 pairs
      "92c091dbffffffff41",  // str32 claiming 4 GiB
      "92c091c6ffffffff41",  // bin32 claiming 4 GiB
      "92c091c9ffffffff01",  // ext32 claiming 4 GiB
      "92c091c1",            // never-used marker
  };
  for (const std::string& hex : hexes) {
    DecodedBatch batch;
    EXPECT_FALSE(EventDecoder().Decode(FromHex(hex), &batch).ok()) << hex;
    EXPECT_LT(batch.hashes.capacity(), 1u << 20) << hex;
  }
}

TEST(EventDecoderMalformed, DeepNestingFailsBatch) {
  for (size_t depth : {33u, 100u, 100000u}) {
    std::string payload = FromHex("92c0");
    payload += std::string(depth, '\x91');
    payload += '\xc0';
    DecodedBatch batch;
    absl::Status status = EventDecoder().Decode(payload, &batch);
    EXPECT_FALSE(status.ok()) << depth;
    EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("nesting"));
  }
  // Depth within the limit (inside an ignored field) is fine.
  Mp ev = StoreEvent({1}, "GPU");
  Mp nested = Mp(1);
  for (int i = 0; i < 20; ++i) nested = MpArray{nested};
  std::get<MpArray>(ev.v)[3] = nested;
  EXPECT_EQ(DecodeAndDescribe(PackBatch({ev})), (Actions{"REPORT HBM [1]"}));
}

TEST(EventDecoderMalformed, HugeMapOfIgnoredKeysDecodes) {
  MpMap m{{Mp("type"), Mp("BlockRemoved")},
          {Mp("block_hashes"), Hashes({1})},
          {Mp("medium"), Mp("GPU")}};
  for (int i = 0; i < 100000; ++i) m.emplace_back(Mp(i), Mp(i));
  EXPECT_EQ(DecodeAndDescribe(PackBatch({Mp(std::move(m))})),
            (Actions{"REVOKE HBM [1]"}));
}

TEST(EventDecoderMalformed, TrailingBytesAfterBatchAreIgnored) {
  std::string payload = PackBatch({StoreEvent({1}, "GPU")}) + "\xc0\xc0";
  EXPECT_EQ(DecodeAndDescribe(payload), (Actions{"REPORT HBM [1]"}));
}

TEST(EventDecoderMalformed, DuplicateHashKeyLastWins) {
  Mp ev = MpMap{{Mp("type"), Mp("BlockStored")},
                {Mp("block_hashes"), Hashes({1, 2})},
                {Mp("medium"), Mp("GPU")},
                {Mp("block_hashes"), Hashes({3})}};
  EXPECT_EQ(DecodeAndDescribe(PackBatch({ev})), (Actions{"REPORT HBM [3]"}));
}

// Deterministic mutation smoke test: no input may crash or hang the decoder,
// and a failed batch never leaves partial output behind.
TEST(EventDecoderMalformed, RandomMutationsNeverCrash) {
  const uint32_t seed = 20261130;
  std::mt19937 rng(seed);
  const std::vector<std::string> seeds = {
      FromHex(testing::kGoldenG1), FromHex(testing::kGoldenX3),
      FromHex(testing::kGoldenX5), FromHex(testing::kGoldenX4)};
  DecodedBatch batch;
  EventDecoder decoder;
  for (int i = 0; i < 20000; ++i) {
    std::string payload = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % payload.size();
      switch (rng() % 3) {
        case 0:
          payload[pos] = static_cast<char>(rng());
          break;
        case 1:
          payload.erase(pos, 1 + rng() % 3);
          break;
        default:
          payload.insert(pos, 1, static_cast<char>(rng()));
          break;
      }
      if (payload.empty()) payload = "\x90";
    }
    if (!decoder.Decode(payload, &batch).ok()) {
      ASSERT_TRUE(batch.events.empty()) << "seed " << seed << " iter " << i;
      ASSERT_TRUE(batch.hashes.empty()) << "seed " << seed << " iter " << i;
    } else {
      for (const KvEvent& ev : batch.events) {
        ASSERT_LE(ev.hash_begin + ev.hash_count, batch.hashes.size())
            << "seed " << seed << " iter " << i;
      }
    }
  }
}

}  // namespace
}  // namespace kvindexer::bridge
