// The golden msgpack payloads of docs/bridge-events.md, "Golden payloads", as
// hex.
#ifndef KVINDEXER_BRIDGE_TESTS_GOLDEN_PAYLOADS_H_
#define KVINDEXER_BRIDGE_TESTS_GOLDEN_PAYLOADS_H_

#include <cstdint>

namespace kvindexer::bridge::testing {

inline constexpr char kGoldenG1[] =
    "93cb405edd2f1a9fbe779397ab426c6f636b53746f72656492cf0000011f71fb04cbd2c521"
    "974f2a940a141e280407a347505593ac426c6f636b52656d6f7665649264ccc8a44449534b"
    "91b0416c6c426c6f636b73436c656172656402";
inline constexpr char kGoldenG2[] =
    "93cb3ff80000000000009197ab426c6f636b53746f726564916fc092920a1492141e02c0a3"
    "47505503";
inline constexpr char kGoldenG3[] =
    "93cb00000000000000009297ab426c6f636b53746f7265649101c092050602c0c093ac426c"
    "6f636b52656d6f7665649102c0c0";
inline constexpr char kGoldenX1[] =
    "93cb41d954fc402000009297ab426c6f636b53746f72656491d3cf97adeedb59e05bc09401"
    "02030404c0a347505597ab426c6f636b53746f72656491cf4ebfa8a1f3c34151d3cf97adee"
    "db59e05b940506070804c0a347505500";
inline constexpr char kGoldenX2[] =
    "93cb41d954fc402000009197ab426c6f636b53746f72656492d3cf97adeedb59e05bcf4ebf"
    "a8a1f3c34151c098010203040506070804c0a347505500";
inline constexpr char kGoldenX3[] =
    "93cb41d954fc402000009198ab426c6f636b53746f72656491d3cf97adeedb59e05bc09401"
    "02030404c0a347505592a466756c6ca373776100";
inline constexpr char kGoldenX4[] =
    "93cb41d954fc402000009293ac426c6f636b52656d6f76656492d3cf97adeedb59e05bcf4e"
    "bfa8a1f3c34151a347505591b0416c6c426c6f636b73436c656172656400";
inline constexpr char kGoldenX5[] =
    "93cb41d954fc402000009187a474797065ab426c6f636b53746f726564ac626c6f636b5f68"
    "617368657391d3cf97adeedb59e05bb1706172656e745f626c6f636b5f68617368c0a9746f"
    "6b656e5f6964739401020304aa626c6f636b5f73697a6504a76c6f72615f6964c0a66d6564"
    "69756da347505500";

// The [1..8], page-size-4 vectors of docs/bridge-events.md, "Block hashes".
inline constexpr int64_t kH0 = -3488128144981237669;
inline constexpr int64_t kH1 = 5674439469042975057;

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_BRIDGE_TESTS_GOLDEN_PAYLOADS_H_
